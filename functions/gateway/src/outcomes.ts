// Outcome reports (control-plane seed §5): one observation per request — two for one that broke after its
// success (a head, an established tunnel), which the tally pairs (passive.ts) — queued for the reporter in a
// bounded buffer. When the buffer is full a low-value sample is dropped and counted (OutcomeQueue): the
// hot path is never slowed down or blocked by reporting. Each is queued with the worker's monotonic time,
// kept off the wire: how old it is when taken is read on that clock, never from `at` (a wall-clock step
// would age it wrong, control/reporting.ts).
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
  /** When it was seen on the wall clock (epoch ms): sent on the wire, never read for its age. */
  readonly at: number;
}

/** An outcome as taken off the queue: its age then, on the monotonic clock it was queued by. */
export interface TakenOutcome extends Outcome {
  readonly ageMs: number;
}

/**
 * The queue the reporter drains, oldest first. When it is full, low-value samples go (contract seed §5:
 * "low-value samples are dropped and counted"): an incoming success is dropped; an incoming failure — the
 * evidence the probe's PASSIVE track and the operator need — displaces the oldest queued success, and is
 * dropped itself only when every queued sample is a failure. Successes and failures sit in two FIFO rings
 * stamped with one arrival sequence, so the eviction is O(1) and take() merges them back in arrival order;
 * push allocates nothing: each sample's monotonic time sits beside it in the ring's number array.
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

  /**
   * `monoMs`: now on a monotonic clock, the one take() is given. False when a sample was dropped
   * (counted): this one, or the older success it displaced.
   */
  push(o: Outcome, monoMs: number): boolean {
    if (this.size >= this.capacity) {
      this.droppedTotal++;
      if (o.ok || this.ok.count === 0) return false;
      this.ok.shift();
      this.failed.push(o, this.seq++, monoMs);
      return false;
    }
    (o.ok ? this.ok : this.failed).push(o, this.seq++, monoMs);
    return true;
  }

  /** Removes and returns up to `max` of the oldest outcomes, in arrival order, each its age at `monoMs`. */
  take(max: number, monoMs: number): TakenOutcome[] {
    const n = Math.min(max, this.size);
    const out: TakenOutcome[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const fromOk =
        this.failed.count === 0 || (this.ok.count > 0 && this.ok.headSeq() < this.failed.headSeq());
      const ring = fromOk ? this.ok : this.failed;
      const ageMs = monoMs - ring.headMono();
      out[i] = { ...ring.shift(), ageMs };
    }
    return out;
  }
}

/** A bounded FIFO ring whose slots also keep each sample's arrival sequence and monotonic time. */
class Fifo {
  private readonly items: (Outcome | undefined)[];
  private readonly seqs: Float64Array;
  private readonly monos: Float64Array;
  private head = 0;
  count = 0;

  constructor(private readonly capacity: number) {
    this.items = new Array(capacity);
    this.seqs = new Float64Array(capacity);
    this.monos = new Float64Array(capacity);
  }

  /** The caller keeps count below capacity. */
  push(o: Outcome, seq: number, monoMs: number): void {
    const i = (this.head + this.count) % this.capacity;
    this.items[i] = o;
    this.seqs[i] = seq;
    this.monos[i] = monoMs;
    this.count++;
  }

  headSeq(): number {
    return this.seqs[this.head]!;
  }

  headMono(): number {
    return this.monos[this.head]!;
  }

  shift(): Outcome {
    const o = this.items[this.head]!;
    this.items[this.head] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.count--;
    return o;
  }
}
