// Loopback addresses for emulated instances: each RUNNING instance's proxy listens on its own
// 127.x.y.z (the whole 127/8 reaches the loopback interface on Linux), reported as its networkIP and
// natIP. Fresh addresses are handed out first and freed ones last, so an address a deleted instance
// just gave up is not immediately someone else's (a stale client would reach the wrong proxy).

export interface AddressRange {
  first: string;
  last: string;
}

export const DEFAULT_RANGE: AddressRange = { first: '127.0.0.2', last: '127.0.255.254' };

export function ipToInt(ip: string): number {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new Error(`not an IPv4 address: ${ip}`);
  }
  return ((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!;
}

export const intToIp = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;

/** .0 and .255 look like network and broadcast addresses to tools, and 127.0.0.1 is the host itself. */
const usable = (n: number) => (n & 255) !== 0 && (n & 255) !== 255 && n !== ipToInt('127.0.0.1');

export class LoopbackPool {
  private next: number;
  private end: number;
  /** Where the fresh walk wraps to when it started inside the range: [first, start) comes last. */
  private wrap: { first: number; end: number } | null = null;
  private readonly inUse = new Set<number>();
  private freed: number[] = [];
  private freedHead = 0;

  /**
   * `startAt` (an address in the range) begins the walk of fresh addresses there instead of at `first`,
   * wrapping around: several emulators on one machine (parallel test files) that each start at a
   * different random point do not walk the same addresses in lockstep, each colliding with the other's
   * proxies on every bind.
   */
  constructor(range: AddressRange = DEFAULT_RANGE, startAt?: string) {
    const first = ipToInt(range.first);
    this.next = first;
    this.end = ipToInt(range.last);
    if (this.next >>> 24 !== 127 || this.end >>> 24 !== 127 || this.end < this.next) {
      throw new Error(`loopback range must lie in 127.0.0.0/8: ${range.first}-${range.last}`);
    }
    if (startAt !== undefined) {
      const start = ipToInt(startAt);
      if (start < first || start > this.end)
        throw new Error(`${startAt} is outside ${range.first}-${range.last}`);
      if (start > first) this.wrap = { first, end: start - 1 };
      this.next = start;
    }
  }

  /** An address nobody holds, or null when the range is exhausted. */
  allocate(): string | null {
    for (;;) {
      while (this.next <= this.end) {
        const n = this.next++;
        if (usable(n) && !this.inUse.has(n)) return this.take(n);
      }
      if (!this.wrap) break;
      this.next = this.wrap.first;
      this.end = this.wrap.end;
      this.wrap = null;
    }
    while (this.freedHead < this.freed.length) {
      const n = this.freed[this.freedHead++]!;
      if (this.freedHead > 1024 && this.freedHead * 2 > this.freed.length) {
        this.freed = this.freed.slice(this.freedHead);
        this.freedHead = 0;
      }
      if (!this.inUse.has(n)) return this.take(n);
    }
    return null;
  }

  release(ip: string): void {
    const n = ipToInt(ip);
    if (this.inUse.delete(n)) this.freed.push(n);
  }

  get inUseCount(): number {
    return this.inUse.size;
  }

  private take(n: number): string {
    this.inUse.add(n);
    return intToIp(n);
  }
}

/** A random address of the range, for `startAt`. `random` returns [0, 1) (Math.random). */
export function randomStart(random: () => number, range: AddressRange = DEFAULT_RANGE): string {
  const first = ipToInt(range.first);
  const span = ipToInt(range.last) - first + 1;
  return intToIp(first + Math.floor(random() * span));
}
