// How a name is resolved where a stuck look-up must not stall the others — the gateway's SSRF guard (a
// target name) and the probe's checks (a proxy's endpoint host): over DNS with c-ares (node:dns
// Resolver), not getaddrinfo. `dns.lookup` runs getaddrinfo on libuv's thread pool — four threads by
// default, shared with the file system and crypto — so a few look-ups of names whose nameserver never
// answers (one slow zone is enough; a hostile client can name any; one external provider's nameserver
// down) hold every thread for the system resolver's whole timeout and stall every other uncached
// look-up behind them. c-ares queries on the event loop, with its own timeout and tries. A name DNS says
// does not exist (NXDOMAIN, or no A and no AAAA) goes to getaddrinfo after all: it reads /etc/hosts and
// applies resolv.conf's search list, which c-ares queries do not, and a name that does not exist is
// answered at once, not after a timeout. At once as a rule only: a name whose nameserver says NXDOMAIN to
// c-ares and then stops answering (a hostile zone, a name a crawled page made up, one per request) holds
// a pool thread for resolv.conf's timeouts × attempts × search domains. So at most FALLBACK_THREADS such
// look-ups run at once (boundFallback); the pool keeps the rest of its threads for everything else (the
// gateway dials an upstream named by host through dns.lookup).
import { ADDRCONFIG, type LookupAddress, type LookupOptions } from 'node:dns';
import { lookup, Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/** A name's addresses, every family; rejects when it has none (dnsResolve is the deployed one). */
export type Resolve = (host: string) => Promise<string[]>;

export interface DnsOptions {
  /** Nameservers ("ip" or "ip:port"); empty: the system's (resolv.conf), as c-ares reads them. */
  servers: readonly string[];
  /** Per query attempt; c-ares doubles it on each retry. */
  timeoutMs: number;
  tries: number;
}

/** c-ares codes meaning "DNS answered: no such name or no such record", where /etc/hosts may still know it. */
const ABSENT = new Set(['ENOTFOUND', 'ENODATA']);

const codeOf = (r: PromiseSettledResult<string[]>): string | undefined =>
  r.status === 'rejected' ? (r.reason as NodeJS.ErrnoException | undefined)?.code : undefined;

export const systemLookup: Resolve = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** Fallback look-ups (getaddrinfo) running at once, of libuv's four threads. */
export const FALLBACK_THREADS = 2;
/** Fallback look-ups waiting for one of those at most; past it a look-up fails at once. */
export const FALLBACK_QUEUE = 64;

export interface FallbackBound {
  /** Look-ups running at once. */
  max: number;
  /** Look-ups waiting at most; beyond, a look-up fails at once. */
  queueMax: number;
  /** How long a look-up waits for its turn before it fails. */
  waitMs: number;
}

/**
 * `fallback` with at most `max` calls in flight; the next ones wait for a turn (a finishing call hands its
 * turn over directly), at most `queueMax` of them and each for at most `waitMs`. A look-up refused so
 * fails as a look-up the resolver could not answer (EAI_AGAIN): the gateway's guard refuses its target as
 * unresolvable, a probe check fails its DIAL.
 */
export function boundFallback(fallback: Resolve, bound: FallbackBound): Resolve {
  let running = 0;
  const waiting: Array<() => void> = [];
  const busy = (host: string) =>
    Object.assign(new Error(`look-up of ${host} refused: ${bound.max} hosts-file look-ups already running`), {
      code: 'EAI_AGAIN',
    });
  const turn = (host: string): Promise<void> | void => {
    if (running < bound.max) {
      running++;
      return;
    }
    if (waiting.length >= bound.queueMax) throw busy(host);
    return new Promise<void>((resolve, reject) => {
      const go = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(go), 1);
        reject(busy(host));
      }, bound.waitMs);
      waiting.push(go);
    });
  };
  const done = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  return async (host) => {
    await turn(host);
    try {
      return await fallback(host);
    } finally {
      done();
    }
  };
}

export function dnsResolve(opts: DnsOptions, unbounded: Resolve = systemLookup): Resolve {
  const fallback = boundFallback(unbounded, {
    max: FALLBACK_THREADS,
    queueMax: FALLBACK_QUEUE,
    waitMs: opts.timeoutMs * opts.tries,
  });
  const resolver = new Resolver({ timeout: opts.timeoutMs, tries: opts.tries });
  if (opts.servers.length > 0) resolver.setServers([...opts.servers]);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses = [
      ...(v4.status === 'fulfilled' ? v4.value : []),
      ...(v6.status === 'fulfilled' ? v6.value : []),
    ];
    if (addresses.length > 0) return addresses;
    const c4 = codeOf(v4);
    const c6 = codeOf(v6);
    // Both families answered "none" (or one did and the other had nothing): not a DNS name, perhaps a
    // hosts-file one.
    if ((c4 === undefined || ABSENT.has(c4)) && (c6 === undefined || ABSENT.has(c6))) return fallback(host);
    throw v4.status === 'rejected' ? v4.reason : (v6 as PromiseRejectedResult).reason;
  };
}

/** The address families this host has a non-loopback address of (getaddrinfo's AI_ADDRCONFIG). */
function configuredFamilies(): ReadonlySet<number> {
  const families = new Set<number>();
  for (const list of Object.values(networkInterfaces())) {
    // 'IPv4'/'IPv6' (a number on Node 18.0–18.3).
    for (const a of list ?? []) if (!a.internal) families.add(String(a.family).endsWith('6') ? 6 : 4);
  }
  return families;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * `resolve` as the `lookup` option of net.connect / http.request, so a socket dialled to a name resolves
 * it there instead of through dns.lookup: every address when Node asks for all (happy eyeballs), else
 * the first, of the family asked for if one is. IP literals never reach it (Node dials them as they are).
 * The look-up itself has no deadline of its own beyond the resolver's: the socket's (a request's signal,
 * a destroy) ends the dial, and the answer arriving later is dropped with it. Node asks with ADDRCONFIG
 * (no family given), as getaddrinfo honours it: only the families this host has an address of — on an
 * IPv4-only runtime (Cloud Functions) a dual-stack name's AAAA went into happy eyeballs, which gives the
 * IPv4 attempt 250 ms before moving on to an IPv6 one that fails at once: a proxy slower than that to
 * accept failed its dial. The host's families are read once per lookup function (made once per process:
 * proxyProber), not on every dial.
 */
export function lookupVia(resolve: Resolve, configured: () => ReadonlySet<number> = configuredFamilies) {
  let families: ReadonlySet<number> | undefined;
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const usable = addresses
          .map((address) => ({ address, family: isIP(address) }))
          .filter((a) => a.family !== 0 && (family === 0 || a.family === family));
        let here: ReadonlySet<number> | null = null;
        if (((options.hints ?? 0) & ADDRCONFIG) !== 0) {
          families ??= configured();
          here = families;
        }
        const kept = here ? usable.filter((a) => here.has(a.family)) : usable;
        // No address of a configured family: the others are tried rather than none (a host whose only
        // addresses are loopback ones configures no family by getaddrinfo's rule either).
        const all = kept.length > 0 ? kept : usable;
        if (all.length === 0) {
          const err = Object.assign(new Error(`no address of ${hostname}`), {
            code: 'ENOTFOUND',
            hostname,
          });
          return callback(err, options.all ? [] : '', 0);
        }
        if (options.all) return callback(null, all);
        callback(null, all[0]!.address, all[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, options.all ? [] : '', 0),
    );
  };
}

/** A resolver's `lookup` option for a dial (lookupVia), made once where the dials share it. */
export type DialLookup = ReturnType<typeof lookupVia>;

/** The dial's `lookup` option: the given one, or none (Node's dns.lookup). */
export const lookupOption = (lookup: DialLookup | undefined) => (lookup ? { lookup } : {});
