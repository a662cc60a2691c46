// Resource ids and operation names that look like GCE's (unsigned 64-bit decimal ids,
// "operation-<ms>-<hex>-<hex>-<hex>" names) yet are reproducible: a splitmix64 stream from a seed.

const MASK = (1n << 64n) - 1n;

export class IdSource {
  private state: bigint;

  constructor(seed = 0x5eed_c0de) {
    this.state = BigInt(seed) & MASK;
  }

  private next(): bigint {
    this.state = (this.state + 0x9e3779b97f4a7c15n) & MASK;
    let z = this.state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
    return z ^ (z >> 31n);
  }

  /** A 19-digit id, as GCE's ids usually are. */
  id(): string {
    return String(1_000_000_000_000_000_000n + (this.next() % 8_000_000_000_000_000_000n));
  }

  operationName(nowMs: number): string {
    const hex = this.next().toString(16).padStart(16, '0') + this.next().toString(16).padStart(16, '0');
    return `operation-${nowMs}-${hex.slice(0, 13)}-${hex.slice(13, 21)}-${hex.slice(21, 29)}`;
  }
}
