// dnsResolve (the gateway's and the probe's) against a real nameserver on loopback
// (test/support/dns-server.ts): both families, the hosts-file fallback only for names DNS says do not
// exist, and a silent nameserver that times out without touching libuv's thread pool; lookupVia, the
// same resolver as a socket's `lookup` option.
import { ADDRCONFIG } from 'node:dns';
import { lookup } from 'node:dns/promises';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DnsServer, startDnsServer } from '../../../test/support/dns-server.js';
import { boundFallback, dnsResolve, lookupVia } from './dns-resolve.js';

let dns: DnsServer;

beforeAll(async () => {
  dns = await startDnsServer({
    a: { 'both.test': ['10.0.0.5'], 'v4.test': ['93.184.216.34'], 'loop.test': ['127.0.0.1'] },
    aaaa: { 'both.test': ['fd00::5'] },
    silent: (name) => name.endsWith('.hang.test'),
  });
});
afterAll(() => dns?.close());

const fallbackCalls: string[] = [];
const fallback = async (host: string) => {
  fallbackCalls.push(host);
  return ['127.0.0.9'];
};
const resolver = () => dnsResolve({ servers: [dns.address], timeoutMs: 300, tries: 1 }, fallback);

describe('dnsResolve', () => {
  it('returns every address of both families', async () => {
    expect((await resolver()('both.test')).sort()).toEqual(['10.0.0.5', 'fd00::5']);
    expect(await resolver()('v4.test')).toEqual(['93.184.216.34']);
    expect(dns.queries).toEqual(expect.arrayContaining(['A both.test', 'AAAA both.test']));
  });

  it('hands a name DNS does not know to the hosts-file look-up', async () => {
    fallbackCalls.length = 0;
    expect(await resolver()('nowhere.test')).toEqual(['127.0.0.9']);
    expect(fallbackCalls).toEqual(['nowhere.test']);
  });

  it('a silent nameserver is a timeout, not a fallback, and holds no thread of the pool meanwhile', async () => {
    fallbackCalls.length = 0;
    const r = resolver();
    const settled: boolean[] = [];
    // More pending look-ups than libuv has threads (4): with getaddrinfo the next one would queue behind them.
    const pending = Array.from({ length: 8 }, (_, i) =>
      r(`n${i}.hang.test`).then(
        () => settled.push(true),
        (e: NodeJS.ErrnoException) => {
          settled.push(true);
          return e.code;
        },
      ),
    );
    // A thread-pool job (getaddrinfo of localhost, from /etc/hosts) completes while all eight still wait.
    await lookup('localhost');
    expect(settled).toEqual([]);
    expect(await Promise.all(pending)).toEqual(Array(8).fill('ETIMEOUT'));
    expect(fallbackCalls).toEqual([]);
  });
});

describe('lookupVia', () => {
  const ask = (host: string, options: { all?: boolean; family?: number }) =>
    new Promise<{ err: string | null; address: unknown; family?: number }>((resolve) =>
      lookupVia(resolver())(host, options, (err, address, family) =>
        resolve({ err: err?.code ?? null, address, family }),
      ),
    );

  it("answers as dns.lookup does: the first address, every one when asked for all, or the asked family's", async () => {
    expect(await ask('v4.test', {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(await ask('both.test', { all: true })).toEqual({
      err: null,
      address: [
        { address: '10.0.0.5', family: 4 },
        { address: 'fd00::5', family: 6 },
      ],
      family: undefined,
    });
    expect(await ask('both.test', { family: 6 })).toEqual({ err: null, address: 'fd00::5', family: 6 });
    expect((await ask('v4.test', { family: 6 })).err).toBe('ENOTFOUND');
    expect((await ask('n.hang.test', {})).err).toBe('ETIMEOUT');
  });

  // net.connect with no family asks { all: true, hints: ADDRCONFIG }, as getaddrinfo honours it. Ignored,
  // an IPv4-only host got a dual-stack name's AAAA too, and happy eyeballs left a proxy slower than 250 ms
  // to accept for an IPv6 attempt that fails at once.
  it("with ADDRCONFIG, only the families this host has an address of (all when it has none of the name's)", async () => {
    const asked = (configured: number[]) =>
      new Promise<unknown>((resolve) =>
        lookupVia(resolver(), () => new Set(configured))(
          'both.test',
          { all: true, hints: ADDRCONFIG },
          (_err, address) => resolve(address),
        ),
      );
    expect(await asked([4])).toEqual([{ address: '10.0.0.5', family: 4 }]);
    expect(await asked([4, 6])).toHaveLength(2);
    expect(await asked([])).toHaveLength(2);
  });

  it('as the lookup option, a socket dials the address the nameserver gave', async () => {
    const server = net.createServer((s) => s.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const queries = dns.queries.length;
      const socket = net.connect({
        host: 'loop.test',
        port: (server.address() as AddressInfo).port,
        lookup: lookupVia(resolver()),
      });
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      expect(socket.remoteAddress).toBe('127.0.0.1');
      socket.destroy();
      expect(dns.queries.slice(queries)).toContain('A loop.test');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('boundFallback', () => {
  /** A fallback whose calls stay pending until the test settles them, by name. */
  function held() {
    const pending = new Map<string, (a: string[]) => void>();
    const calls: string[] = [];
    const fn = (host: string) =>
      new Promise<string[]>((resolve) => {
        calls.push(host);
        pending.set(host, resolve);
      });
    return { fn, calls, settle: (host: string) => pending.get(host)!([`addr-of-${host}`]) };
  }
  const code = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e: NodeJS.ErrnoException) => e.code,
    );

  it('runs at most `max` at once; a finished one hands its turn to the first waiting', async () => {
    const f = held();
    const r = boundFallback(f.fn, { max: 2, queueMax: 10, waitMs: 60_000 });
    const a = r('a');
    const b = r('b');
    const c = r('c');
    await new Promise((resolve) => setImmediate(resolve));
    expect(f.calls).toEqual(['a', 'b']);
    f.settle('a');
    expect(await a).toEqual(['addr-of-a']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(f.calls).toEqual(['a', 'b', 'c']);
    // A new call now waits too: the turn went to c, not back to the pool.
    const d = r('d');
    await new Promise((resolve) => setImmediate(resolve));
    expect(f.calls).toEqual(['a', 'b', 'c']);
    f.settle('b');
    f.settle('c');
    await Promise.all([b, c]);
    await new Promise((resolve) => setImmediate(resolve));
    f.settle('d');
    expect(await d).toEqual(['addr-of-d']);
  });

  it('fails a look-up at once past `queueMax` waiting, and one that waited `waitMs`, as EAI_AGAIN', async () => {
    vi.useFakeTimers();
    try {
      const f = held();
      const r = boundFallback(f.fn, { max: 1, queueMax: 1, waitMs: 1_000 });
      void r('slow');
      const queued = code(r('queued'));
      expect(await code(r('over'))).toBe('EAI_AGAIN');
      await vi.advanceTimersByTimeAsync(1_000);
      expect(await queued).toBe('EAI_AGAIN');
      expect(f.calls).toEqual(['slow']);
      // The queue has room again, and the running one's end lets the next one through.
      const next = r('next');
      f.settle('slow');
      await vi.advanceTimersByTimeAsync(0);
      f.settle('next');
      expect(await next).toEqual(['addr-of-next']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a failing fallback gives its turn back', async () => {
    let n = 0;
    const r = boundFallback(
      async () => {
        n++;
        throw Object.assign(new Error('no'), { code: 'ENOTFOUND' });
      },
      { max: 1, queueMax: 0, waitMs: 1_000 },
    );
    for (let i = 0; i < 3; i++) expect(await code(r(`x${i}`))).toBe('ENOTFOUND');
    expect(n).toBe(3);
  });
});
