// The fast path must be byte-identical to the gateway's canonicalize(): the worker verifies checksums with
// that one. Randomised content (attributes, credentials, hosts, routing, odd characters) against it.
import { describe, expect, it } from 'vitest';
import type { GatewayProxy, GatewaySnapshotContent } from '../../messages/gateway-snapshot.js';
import { sha256Hex } from '../../messages/gateway-snapshot.js';
import {
  buildSnapshot,
  canonicalize,
  canonicalJson,
  canonicalProxy,
  snapshotChecksum,
} from '../gateway/canonical.js';
import { applyDelta, buildDelta } from '../gateway/delta.js';
import {
  buildPrepared,
  canonicalText,
  deltaPrepared,
  fastSnapshotChecksum,
  prepare,
  proxyFragment,
} from './canonical-fast.js';

let seed = 42;
const rnd = (n: number) => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
};
const pick = <T>(xs: T[]) => xs[rnd(xs.length)]!;
const weird = ['a', 'Zz', 'ü', '"q"', 'back\\slash', 'ctl\u0001', '😀', 'x-y_z.w', ''];

function proxy(i: number): GatewayProxy {
  const attrs: Record<string, string> = {};
  for (let k = rnd(4); k > 0; k--) attrs[pick(['country', 'Tier', 'a.b', 'z_9', 'A'])] = pick(weird);
  return {
    name: `p${i}-${pick(['a', 'b', 'c'])}`,
    host: pick(['10.0.0.1', 'proxy.example.com', '2001:db8::1']),
    port: 1 + rnd(65535),
    protocol: 'http',
    capacity: 1 + rnd(1000),
    expiresAt: pick(['2026-01-01T00:03:00.000Z', '2026-01-01T00:03:00Z', '2026-01-01T01:03:00+01:00']),
    usableUntil: '2026-01-01T00:02:50.000Z',
    attributes: attrs,
    ...(rnd(2)
      ? { credentialsRef: { secret: `s${i}`, version: pick(['latest', '3']) } }
      : rnd(2)
        ? { credentialsRef: { secret: `s${i}` } as never }
        : {}),
    ...pick([{}, { filtersDestinations: true }, { filtersDestinations: false }]),
    // Unsorted, duplicated, odd characters, empty (canonical: sorted, unique, omitted when empty).
    ...pick<Partial<GatewayProxy>>([
      {},
      {},
      { excludedRoutes: ['shop'] },
      { excludedRoutes: ['shop', 'default', 'shop'] },
      { excludedRoutes: ['Zz', 'a', 'ü', '"q"', 'back\\slash', '😀'] },
      { excludedRoutes: [] },
    ]),
    // Canonical: only `true` is written (it sorts between protocol and usableUntil).
    ...pick<Partial<GatewayProxy>>([{}, {}, { suspect: true }, { suspect: false }]),
  };
}

function content(n: number): GatewaySnapshotContent {
  return {
    schemaVersion: 1,
    version: 0,
    ownershipEpoch: rnd(100),
    workerId: 'gw-1',
    generatedAt: '2026-01-01T00:00:00Z',
    validUntil: '2026-01-01T00:03:00.000Z',
    routing: [
      {
        name: 'shop',
        match: { hosts: ['Shop.Example', '*.shop.example'] },
        selector: { country: 'de' },
        policy: 'sticky',
        stickyKey: { header: 'X-Session' },
      },
      { name: 'default', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' },
    ],
    proxies: Array.from({ length: n }, (_, i) => proxy(i)).filter(
      (p, i, all) => all.findIndex((q) => q.name === p.name) === i,
    ),
  };
}

describe('canonical-fast ≡ canonicalize', () => {
  it.each(Array.from({ length: 25 }, (_, i) => [i]))('random snapshot #%s', () => {
    const c = content(1 + rnd(40));
    const version = 1 + rnd(1000);
    const p = prepare(c);
    expect(canonicalText(p, version, c.generatedAt)).toBe(canonicalize({ ...c, version }));
    expect(buildPrepared(p, version, sha256Hex).checksum).toBe(
      buildSnapshot({ ...c, version }, sha256Hex).checksum,
    );
    // What the worker verifies with, on the content as it arrives (proxies in any order).
    const shuffled = { ...c, version, proxies: [...c.proxies].reverse() };
    expect(fastSnapshotChecksum(shuffled, sha256Hex)).toBe(snapshotChecksum(shuffled, sha256Hex));
  });

  it('each proxy fragment alone', () => {
    for (let i = 0; i < 200; i++) {
      const p = proxy(i);
      const viaCanonical = canonicalize({ ...content(0), version: 1, proxies: [p] });
      expect(viaCanonical).toContain(`"proxies":[${proxyFragment(p)}]`);
    }
  });

  it.each<[string, Partial<GatewayProxy>, Partial<GatewayProxy>, boolean]>([
    ['absent and empty are the same', {}, { excludedRoutes: [] }, true],
    [
      'order and duplicates do not matter',
      { excludedRoutes: ['b', 'a'] },
      { excludedRoutes: ['a', 'b', 'a'] },
      true,
    ],
    ['a route added', { excludedRoutes: ['a'] }, { excludedRoutes: ['a', 'b'] }, false],
    ['a route excluded vs none', {}, { excludedRoutes: ['a'] }, false],
  ])('excludedRoutes: %s → same fragment %s', (_n, x, y, same) => {
    const base = { ...proxy(1), excludedRoutes: undefined };
    const a = proxyFragment({ ...base, ...x });
    const b = proxyFragment({ ...base, ...y });
    expect(a === b).toBe(same);
    expect(
      canonicalJson(canonicalProxy({ ...base, ...x })) === canonicalJson(canonicalProxy({ ...base, ...y })),
    ).toBe(same);
  });

  it.each<[string, Partial<GatewayProxy>, Partial<GatewayProxy>, boolean]>([
    ['false and absent are the same', {}, { suspect: false }, true],
    ['suspect vs not', {}, { suspect: true }, false],
  ])('suspect: %s → same fragment %s', (_n, x, y, same) => {
    const base = { ...proxy(1), suspect: undefined };
    expect(proxyFragment({ ...base, ...x }) === proxyFragment({ ...base, ...y })).toBe(same);
    expect(
      canonicalJson(canonicalProxy({ ...base, ...x })) === canonicalJson(canonicalProxy({ ...base, ...y })),
    ).toBe(same);
  });

  it('an entry without excludedRoutes keeps its canonical text (no key written)', () => {
    const p = { ...proxy(3), excludedRoutes: undefined };
    expect(proxyFragment(p)).not.toContain('excludedRoutes');
    expect(proxyFragment({ ...p, excludedRoutes: ['r'] })).toContain('"excludedRoutes":["r"],"expiresAt"');
  });

  it('a change of only excludedRoutes is an upsert, and the delta applies on its base', () => {
    const a = content(20);
    const changed = a.proxies[4]!.name;
    const b = {
      ...a,
      proxies: a.proxies.map((p) =>
        p.name === changed ? { ...p, excludedRoutes: [...(p.excludedRoutes ?? []), 'added-route'] } : p,
      ),
    };
    const pa = prepare(a);
    const pb = prepare(b);
    const base = buildPrepared(pa, 1, sha256Hex);
    const next = buildPrepared(pb, 2, sha256Hex);
    const fast = deltaPrepared(pa, 1, next, pb);
    expect(fast.upserts.map((p) => p.name)).toEqual([changed]);
    expect(buildDelta(base, next, sha256Hex).upserts.map((p) => p.name)).toEqual([changed]);
    const applied = applyDelta(base, fast, sha256Hex);
    expect(applied.ok && applied.snapshot.checksum).toBe(next.checksum);
  });

  it('its deltas equal the gateway’s buildDelta and apply on their base', () => {
    for (let r = 0; r < 10; r++) {
      const a = content(30);
      const b = {
        ...a,
        proxies: [...a.proxies.slice(rnd(5)), proxy(100 + r)].map((p) =>
          rnd(4) ? p : { ...p, capacity: p.capacity + 1 },
        ),
      };
      const pa = prepare(a);
      const pb = prepare(b);
      const base = buildPrepared(pa, 1, sha256Hex);
      const next = buildPrepared(pb, 2, sha256Hex);
      const fast = deltaPrepared(pa, 1, next, pb);
      const slow = buildDelta(base, next, sha256Hex);
      expect({ ...fast, upserts: fast.upserts.map((p) => p.name) }).toEqual({
        ...slow,
        upserts: slow.upserts.map((p) => p.name),
      });
      const applied = applyDelta(base, fast, sha256Hex);
      expect(applied.ok && applied.snapshot.checksum).toBe(next.checksum);
    }
  });
});
