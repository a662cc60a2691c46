// Outcome reports (control-plane seed §5): one observation per request — two for one that broke after its
// success (a head, an established tunnel), which the tally pairs (passive.ts) — queued for the reporter in a
// bounded buffer. When the buffer is full a low-value sample is dropped and counted (OutcomeQueue): the
// hot path is never slowed down or blocked by reporting.
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

/**
 * The queue the reporter drains, oldest first. When it is full, low-value samples go (contract seed §5:
 * "low-value samples are dropped and counted"): an incoming success is dropped; an incoming failure — the
 * evidence the probe's PASSIVE track and the operator need — displaces the oldest queued success, and is
 * dropped itself only when every queued sample is a failure. Successes and failures sit in two FIFO rings
 * stamped with one arrival sequence, so the eviction is O(1) and take() merges them back in arrival order;
 * push allocates nothing.
 */
export class OutcomeQueue {
  private readonly ok: Fifo;
  private readonly failed: Fifo;
  private seq = 0;
  private droppedTotal = 0;

  constructor(readonly capacity: number) {
    this.ok = new Fifo(capacity);
    this.failed = new Fifo(capacity);
  }

  get size(): number {
    return this.ok.count + this.failed.count;
  }

  get dropped(): number {
    return this.droppedTotal;
  }

  /** False when a sample was dropped (counted): this one, or the older success it displaced. */
  push(o: Outcome): boolean {
    if (this.size >= this.capacity) {
      this.droppedTotal++;
      if (o.ok || this.ok.count === 0) return false;
      this.ok.shift();
      this.failed.push(o, this.seq++);
      return false;
    }
    (o.ok ? this.ok : this.failed).push(o, this.seq++);
    return true;
  }

  /** Removes and returns up to `max` of the oldest outcomes, in arrival order. */
  take(max: number): Outcome[] {
    const n = Math.min(max, this.size);
    const out: Outcome[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const fromOk =
        this.failed.count === 0 || (this.ok.count > 0 && this.ok.headSeq() < this.failed.headSeq());
      out[i] = (fromOk ? this.ok : this.failed).shift();
    }
    return out;
  }
}

/** A bounded FIFO ring whose slots also keep each sample's arrival sequence. */
class Fifo {
  private readonly items: (Outcome | undefined)[];
  private readonly seqs: Float64Array;
  private head = 0;
  count = 0;

  constructor(private readonly capacity: number) {
    this.items = new Array(capacity);
    this.seqs = new Float64Array(capacity);
  }

  /** The caller keeps count below capacity. */
  push(o: Outcome, seq: number): void {
    const i = (this.head + this.count) % this.capacity;
    this.items[i] = o;
    this.seqs[i] = seq;
    this.count++;
  }

  headSeq(): number {
    return this.seqs[this.head]!;
  }

  shift(): Outcome {
    const o = this.items[this.head]!;
    this.items[this.head] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.count--;
    return o;
  }
}
