// The SSRF guard as the listeners use it: IP literals are decided synchronously; names are resolved once
// (a small TTL cache, concurrent look-ups shared) and every answer is classified. The caller connects to
// the returned address, never to the name again, so a DNS answer that changes between the check and
// the connection (rebinding) cannot steer the request.
import type { Resolve } from '../../../shared/src/adapters/dns-resolve.js';
import { isNoDnsName, parseIp } from '../../../shared/src/domain/gateway/ip.js';
import {
  type AllowList,
  classifyName,
  decideTarget,
  type TargetDecision,
} from '../../../shared/src/domain/gateway/ssrf.js';

export interface GuardOptions {
  ttlMs: number;
  maxEntries: number;
  /**
   * Milliseconds on a monotonic clock, for the cache's ages only; default performance.now(). Not the wall
   * clock: one stepped back (NTP, a VM resumed) kept a cached answer past its TTL by the step — traffic
   * sent on to an address the name may no longer have.
   */
  now?: () => number;
}

const monotonicNow = () => performance.now();

export class TargetGuard {
  private readonly cache = new Map<string, { addresses: string[]; untilMs: number }>();
  private readonly inflight = new Map<string, Promise<string[]>>();
  private readonly now: () => number;

  constructor(
    private readonly allow: AllowList,
    private readonly resolve: Resolve,
    private readonly opts: GuardOptions,
  ) {
    this.now = opts.now ?? monotonicNow;
  }

  /** Synchronous for literals and cached names; a promise only when a look-up is needed. */
  check(host: string, port: number): TargetDecision | Promise<TargetDecision> {
    if (parseIp(host)) return decideTarget(host, port, [host], this.allow);
    // No DNS name (an empty label, a numeric last one): an upstream given it in absolute form reads its own
    // address into it (squid: `127.0.0.1.` is 127.0.0.1), whatever a look-up answered here. The proxy
    // listener (head.ts) and /v1/fetch (fetch-through.ts) refuse these spellings as malformed before they
    // get here; this is the backstop for any caller that does not.
    if (isNoDnsName(host)) return { allow: false, reason: 'unresolvable' };
    if (classifyName(host) && !this.allow.hostPorts.has(`${host}:${port}`)) {
      return decideTarget(host, port, ['0.0.0.0'], this.allow);
    }
    const hit = this.cache.get(host);
    if (hit && hit.untilMs > this.now()) return decideTarget(host, port, hit.addresses, this.allow);
    return this.lookup(host).then(
      (addresses) => decideTarget(host, port, addresses, this.allow),
      (): TargetDecision => ({ allow: false, reason: 'unresolvable' }),
    );
  }

  private lookup(host: string): Promise<string[]> {
    let p = this.inflight.get(host);
    if (!p) {
      p = this.resolve(host).then((addresses) => {
        if (this.cache.size >= this.opts.maxEntries) this.cache.clear();
        this.cache.set(host, { addresses, untilMs: this.now() + this.opts.ttlMs });
        return addresses;
      });
      const done = () => this.inflight.delete(host);
      p.then(done, done);
      this.inflight.set(host, p);
    }
    return p;
  }
}
