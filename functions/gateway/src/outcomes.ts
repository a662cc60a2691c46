// Outcome reports (control-plane seed §5): one observation per request, queued for the reporter in a
// bounded ring buffer. When the buffer is full the new sample is dropped and counted: the hot path is
// never slowed down or blocked by reporting.
export type OutcomeStage = 'DIAL' | 'PROXY_HANDSHAKE' | 'RESPONSE_HEADERS' | 'TUNNEL';

export interface Outcome {
  readonly proxy: string;
  readonly route: string;
  /** The last stage reached: where it failed, or the final stage of a success. */
  readonly stage: OutcomeStage;
  readonly ok: boolean;
  /** From the start of the dial to the end of the stage (upstream handshake or response head). */
  readonly latencyMs: number;
  /** host:port the client asked for. */
  readonly target: string;
  /** The upstream's handshake status, or the target's response status. */
  readonly status?: number;
  readonly at: number;
}

export class OutcomeQueue {
  private readonly ring: (Outcome | undefined)[];
  private head = 0;
  private count = 0;
  private droppedTotal = 0;

  constructor(readonly capacity: number) {
    this.ring = new Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  get dropped(): number {
    return this.droppedTotal;
  }

  /** False (and counted) when full. */
  push(o: Outcome): boolean {
    if (this.count === this.capacity) {
      this.droppedTotal++;
      return false;
    }
    this.ring[(this.head + this.count) % this.capacity] = o;
    this.count++;
    return true;
  }

  /** Removes and returns up to `max` of the oldest outcomes. */
  take(max: number): Outcome[] {
    const n = Math.min(max, this.count);
    const out: Outcome[] = new Array(n);
    for (let i = 0; i < n; i++) {
      out[i] = this.ring[this.head]!;
      this.ring[this.head] = undefined;
      this.head = (this.head + 1) % this.capacity;
    }
    this.count -= n;
    return out;
  }
}
