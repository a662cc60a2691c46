import { isIP } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseAllowList } from '../../../shared/src/domain/gateway/ssrf.js';
import { TargetGuard } from './target-guard.js';

function guardWith(answers: Record<string, string[]>, allow: string[] = []) {
  let now = 0;
  const calls: string[] = [];
  const guard = new TargetGuard(
    parseAllowList(allow).allow,
    async (host) => {
      calls.push(host);
      const a = answers[host];
      if (!a) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
      return a;
    },
    { ttlMs: 1000, maxEntries: 100, now: () => now },
  );
  return { guard, calls, answers, advance: (ms: number) => (now += ms) };
}

describe('TargetGuard', () => {
  it('decides literals synchronously, without a look-up', () => {
    const { guard, calls } = guardWith({});
    expect(guard.check('8.8.8.8', 443)).toEqual({ allow: true, address: '8.8.8.8' });
    expect(guard.check('10.0.0.1', 443)).toEqual({ allow: false, reason: 'private' });
    expect(calls).toEqual([]);
  });

  it.each([
    ['a name resolving to a private address', 'evil.example', 'private'],
    ['a name resolving to loopback over IPv6', 'six.example', 'loopback'],
    ['a name resolving to the metadata server', 'meta.example', 'metadata'],
    ['a name that does not resolve', 'nx.example', 'unresolvable'],
  ])('refuses %s', async (_label, host, reason) => {
    const { guard } = guardWith({
      'evil.example': ['10.9.8.7'],
      'six.example': ['::1'],
      'meta.example': ['169.254.169.254'],
    });
    expect(await guard.check(host, 80)).toEqual({ allow: false, reason });
  });

  // What the guard lets through as a literal is what goes to the upstream as the pinned address: the
  // SOCKS5 client picks ATYP 0x01/0x04 by net.isIP and sends anything else as a host name (0x03) for the
  // upstream to resolve. "127.0.0.1::" read as 7f00:1:: (public) and went out as that name.
  it.each([
    '8.8.8.8',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '1:2:3:4:5:6:7::',
    '1.2.3.4::',
    '127.0.0.1::',
    '8.8.8.8::1.2.3.4',
  ])('passes %j as a literal only if node:net reads it as one', async (host) => {
    const { guard } = guardWith({});
    const d = guard.check(host, 443);
    if (d instanceof Promise) {
      expect(isIP(host)).toBe(0);
      expect(await d).toEqual({ allow: false, reason: 'unresolvable' });
    } else {
      expect(d).toEqual({ allow: true, address: host });
      expect(isIP(host)).not.toBe(0);
    }
  });

  it('refuses metadata and localhost names without resolving them', () => {
    const { guard, calls } = guardWith({ localhost: ['8.8.8.8'] });
    expect(guard.check('metadata.google.internal', 80)).toEqual({ allow: false, reason: 'metadata' });
    expect(guard.check('localhost', 80)).toEqual({ allow: false, reason: 'loopback' });
    expect(calls).toEqual([]);
  });

  // A resolver that answers made-up names (NXDOMAIN redirection, a wildcard) gives these a public address,
  // while an upstream handed the name in absolute form reads it as its own address: squid drops every
  // trailing dot (`127.0.0.1.` after /v1/fetch's normalisation of `127.0.0.1..`) and reads `0x7f.1` as
  // inet_aton does. No DNS name: refused, never looked up.
  it.each(['127.0.0.1.', 'example.com.', 'a..b', '0x7f.1', '127.1', '2130706433', '0177.0.0.1'])(
    'refuses %j without resolving it',
    (host) => {
      const { guard, calls } = guardWith({ [host]: ['93.184.216.34'] });
      expect(guard.check(host, 80)).toEqual({ allow: false, reason: 'unresolvable' });
      expect(calls).toEqual([]);
    },
  );

  it.each(['123.example', '0x7f.example', 'a1.example'])('still resolves %j', async (host) => {
    const { guard } = guardWith({ [host]: ['93.184.216.34'] });
    expect(await guard.check(host, 80)).toEqual({ allow: true, address: '93.184.216.34' });
  });

  it('connects to the address it checked: a rebinding answer inside the TTL changes nothing', async () => {
    const { guard, calls, answers, advance } = guardWith({ 'flip.example': ['93.184.216.34'] });
    expect(await guard.check('flip.example', 443)).toEqual({ allow: true, address: '93.184.216.34' });
    answers['flip.example'] = ['127.0.0.1'];
    expect(guard.check('flip.example', 443)).toEqual({ allow: true, address: '93.184.216.34' });
    expect(calls).toHaveLength(1);
    advance(1001);
    expect(await guard.check('flip.example', 443)).toEqual({ allow: false, reason: 'loopback' });
    expect(calls).toHaveLength(2);
  });

  it('shares one look-up between concurrent checks', async () => {
    const { guard, calls } = guardWith({ 'a.example': ['1.1.1.1'] });
    await Promise.all([guard.check('a.example', 80), guard.check('a.example', 443)]);
    expect(calls).toEqual(['a.example']);
  });

  it('lets allow-listed private targets through', async () => {
    const { guard } = guardWith({ 'demo.local': ['127.0.0.1'] }, ['127.0.0.1:8080']);
    expect(await guard.check('demo.local', 8080)).toEqual({ allow: true, address: '127.0.0.1' });
    expect(await guard.check('demo.local', 8081)).toEqual({ allow: false, reason: 'loopback' });
  });
});

describe('TargetGuard clock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  // Its default (gateway.ts passes none) is monotonic: a wall clock stepped back an hour (NTP, a VM
  // resumed) used to keep a 30 s answer for an hour and 30 s, traffic going on to an address the name may
  // no longer have.
  it('ages a cached answer on the monotonic clock, not the wall clock', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'performance'], now: Date.UTC(2026, 0, 1) });
    let lookups = 0;
    const guard = new TargetGuard(
      parseAllowList([]).allow,
      async () => {
        lookups++;
        return ['93.184.216.34'];
      },
      { ttlMs: 30_000, maxEntries: 100 },
    );
    expect(await guard.check('a.example', 443)).toEqual({ allow: true, address: '93.184.216.34' });
    expect(lookups).toBe(1);
    vi.setSystemTime(Date.now() - 3_600_000); // the wall clock only; performance.now() does not move
    vi.advanceTimersByTime(31_000); // both
    expect(await guard.check('a.example', 443)).toEqual({ allow: true, address: '93.184.216.34' });
    expect(lookups).toBe(2);
  });
});
