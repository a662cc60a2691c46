import { describe, expect, it } from 'vitest';
import { GatewayDelta, GatewaySnapshot, sha256Hex } from '../../messages/gateway-snapshot.js';
import { HEALTHY_CONDITIONS } from '../../testing/healthy-conditions.js';
import { aProxy, externalSpec, managedSpec } from '../../testing/proxy-fixtures.js';
import { buildSnapshot } from '../gateway/canonical.js';
import { applyDelta } from '../gateway/delta.js';
import type { ProxyResource } from '../proxy.js';
import { prepare } from './canonical-fast.js';
import { type ContentInput, contentDigest, DEFAULT_ROUTING, workerContent } from './content.js';
import { chooseMessage, jsonBytes, nextVersion } from './next.js';

const now = new Date('2026-01-01T00:00:00Z');
const grant = new Date('2026-01-01T00:03:00Z');
const ready = (name: string, over: Record<string, unknown> = {}): ProxyResource =>
  aProxy({
    name,
    spec: externalSpec({ gatewayPool: true, capacity: 8, attributes: { country: 'de' }, ...over }),
    status: { phase: 'Ready', ip: '203.0.113.7', conditions: HEALTHY_CONDITIONS },
  });
const input = (owned: ProxyResource[], over: Partial<ContentInput> = {}): ContentInput => ({
  workerId: 'w1',
  epoch: 3,
  grant,
  routing: DEFAULT_ROUTING,
  owned,
  now,
  allocationSafetyMarginMs: 10_000,
  protocolVersion: 2,
  ...over,
});

describe('workerContent (contract §3)', () => {
  it('lists owned, healthy, addressed proxies with capacity, expiry, usableUntil and a secret reference', () => {
    const c = workerContent(
      input([
        ready('b', { credentialsRef: { secret: 'b-auth', version: '3' } }),
        ready('a'),
        aProxy({
          name: 'no-ip',
          spec: managedSpec({ gatewayPool: true }),
          status: { phase: 'Provisioning' },
        }),
        aProxy({
          name: 'sick',
          spec: externalSpec({ gatewayPool: true }),
          status: {
            phase: 'Unhealthy',
            conditions: [
              {
                type: 'Healthy',
                status: 'False',
                reason: 'ProbeFailed',
                message: '',
                lastTransitionTime: now,
                observedGeneration: 1,
              },
            ],
          },
        }),
      ]),
    );
    expect(c.proxies.map((p) => p.name)).toEqual(['a', 'b']);
    expect(c.proxies[1]).toEqual({
      name: 'b',
      host: '203.0.113.7',
      port: 8080,
      protocol: 'http',
      capacity: 8,
      expiresAt: '2026-01-01T00:03:00.000Z',
      usableUntil: '2026-01-01T00:02:50.000Z',
      attributes: { country: 'de' },
      credentialsRef: { secret: 'b-auth', version: '3' },
    });
    expect(c).toMatchObject({ ownershipEpoch: 3, workerId: 'w1', validUntil: grant.toISOString() });
    // Valid in the gateway's own wire schema (the worker validates it with the same code).
    expect(
      GatewaySnapshot.safeParse({ kind: 'full', ...c, version: 1, checksum: '0'.repeat(64) }).success,
    ).toBe(true);
  });

  it('leaves a cordoned proxy out, as one that stopped being healthy; uncordoned it is back', () => {
    const owned = (cordoned: boolean) => [ready('a'), ready('b', { cordoned })];
    const cordoned = workerContent(input(owned(true)));
    expect(cordoned.proxies.map((p) => p.name)).toEqual(['a']);
    const back = workerContent(input(owned(false)));
    expect(back.proxies.map((p) => p.name)).toEqual(['a', 'b']);
    // Its going and coming changes the digest: the pass publishes a new version each time.
    const digest = (c: ReturnType<typeof workerContent>) => contentDigest(prepare(c), sha256Hex);
    expect(digest(cordoned)).not.toBe(digest(back));
    // Nor does the entry of an uncordoned proxy say anything about it: byte for byte what it always was.
    expect(back.proxies[1]).not.toHaveProperty('cordoned');
  });

  it('hands out the credentials version the proxy’s instance serves (mid-rotation), else the spec’s', () => {
    const rolling = ready('r', { credentialsRef: { secret: 'r-auth', version: 'latest' } });
    rolling.status.servedCredentials = { secret: 'r-auth', version: '6' };
    const c = workerContent(
      input([rolling, ready('s', { credentialsRef: { secret: 's-auth', version: 'latest' } })]),
    );
    expect(c.proxies.map((p) => p.credentialsRef)).toEqual([
      { secret: 'r-auth', version: '6' },
      { secret: 's-auth', version: 'latest' },
    ]);
  });

  it.each<[string, ProxyResource['spec'], boolean]>([
    ['managed on the default cloud-init (our squid refuses private destinations)', managedSpec(), true],
    [
      'managed with its own cloud-init (could run anything)',
      managedSpec({ cloudInit: { inline: '#!/bin/sh' } }),
      false,
    ],
    ['external (whatever its operator made it)', externalSpec(), false],
  ])('filtersDestinations: %s → %s', (_n, spec, filters) => {
    const p = aProxy({
      name: 'a',
      spec: { ...spec, gatewayPool: true },
      // An external proxy's status.ip is its endpoint host (reconcile's copy); a managed one's, its VM's.
      status: {
        phase: 'Ready',
        ip: spec.mode === 'external' ? spec.endpoint.host : '203.0.113.9',
        conditions: HEALTHY_CONDITIONS,
      },
    });
    const [entry] = workerContent(input([p])).proxies;
    expect(entry?.filtersDestinations).toBe(filters ? true : undefined);
    // Written only when true: an external proxy's entry has no such key at all (old workers accept it).
    expect('filtersDestinations' in entry!).toBe(filters);
    const full = buildSnapshot({ ...workerContent(input([p])), version: 1 }, sha256Hex);
    expect(GatewaySnapshot.parse(full).proxies[0]?.filtersDestinations).toBe(filters ? true : undefined);
    // A worker on protocol 1 does not know the field (its schema is strict): it never gets it.
    const [old] = workerContent(input([p], { protocolVersion: 1 })).proxies;
    expect('filtersDestinations' in old!).toBe(false);
  });

  describe('SOCKS5 entries (protocol 4): never in the snapshot of a worker below it', () => {
    const socks = (name: string): ProxyResource =>
      ready(name, {
        credentialsRef: { secret: `${name}-auth`, version: '2' },
        endpoint: { host: '203.0.113.7', port: 8080, protocol: 'socks5' },
      });
    it.each<[number, string[]]>([
      [1, ['h']],
      [2, ['h']],
      [3, ['h']],
      [4, ['h', 's']],
    ])('protocol %i → %j', (protocolVersion, names) => {
      const c = workerContent(input([socks('s'), ready('h')], { protocolVersion }));
      expect(c.proxies.map((p) => p.name)).toEqual(names);
      // What the worker gets passes its own strict schema (the checksum is not checked by the schema).
      const full = buildSnapshot({ ...c, version: 1 }, sha256Hex);
      expect(GatewaySnapshot.parse(full).proxies.map((p) => p.protocol)).toEqual(
        names.map((n) => (n === 's' ? 'socks5' : 'http')),
      );
    });

    it('the entry names the protocol and carries the credentials reference as an http one does', () => {
      const [entry] = workerContent(input([socks('s')], { protocolVersion: 4 })).proxies;
      expect(entry).toMatchObject({
        name: 's',
        host: '203.0.113.7',
        port: 8080,
        protocol: 'socks5',
        credentialsRef: { secret: 's-auth', version: '2' },
      });
      expect('filtersDestinations' in entry!).toBe(false);
    });
  });

  describe('excludedRoutes (contract §6 TARGET tier): status.unreachableRoutes ∩ the routing, protocol 3 on', () => {
    const routing: ContentInput['routing'] = [
      { name: 'shop', match: { hosts: ['shop.example'] }, selector: {}, policy: 'least-active' },
      { name: 'news', match: { hosts: ['news.example'] }, selector: {}, policy: 'round-robin' },
      { name: 'default', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' },
    ];
    const blocked = (name: string, unreachableRoutes?: string[]): ProxyResource => {
      const p = ready(name);
      return { ...p, status: { ...p.status, ...(unreachableRoutes ? { unreachableRoutes } : {}) } };
    };
    const excludedOf = (p: ProxyResource, protocolVersion: number) => {
      const [entry] = workerContent(input([p], { routing, protocolVersion })).proxies;
      return entry && 'excludedRoutes' in entry ? entry.excludedRoutes : 'absent';
    };
    it.each<[string, string[] | undefined, number, string[] | 'absent']>([
      ['two unreachable routes, protocol 3', ['shop', 'news'], 3, ['news', 'shop']],
      ['a route no longer in the routing is left out', ['gone', 'shop'], 3, ['shop']],
      ['only routes the routing no longer has: no key at all', ['gone'], 3, 'absent'],
      ['duplicates collapse', ['shop', 'shop'], 3, ['shop']],
      ['none unreachable (empty)', [], 3, 'absent'],
      ['none unreachable (absent)', undefined, 3, 'absent'],
      ['protocol 2 never gets the field (its strict schema refuses it)', ['shop'], 2, 'absent'],
      ['protocol 1 never gets the field', ['shop'], 1, 'absent'],
      ['a higher protocol reads it too', ['default'], 4, ['default']],
    ])('%s', (_n, unreachable, protocolVersion, expected) => {
      expect(excludedOf(blocked('a', unreachable), protocolVersion)).toEqual(expected);
    });

    it('an entry of a proxy with nothing excluded is byte for byte what protocol 2 gets', () => {
      const p = blocked('a', ['gone']);
      const v3 = workerContent(input([p], { routing, protocolVersion: 3 }));
      const v2 = workerContent(input([p], { routing, protocolVersion: 2 }));
      expect(JSON.stringify(v3.proxies)).toBe(JSON.stringify(v2.proxies));
    });

    it('a proxy excluded from every route still goes in: the snapshot says what the worker owns', () => {
      const c = workerContent(
        input([blocked('a', ['shop', 'news', 'default']), blocked('b')], { routing, protocolVersion: 3 }),
      );
      expect(c.proxies.map((p) => [p.name, p.excludedRoutes])).toEqual([
        ['a', ['default', 'news', 'shop']],
        ['b', undefined],
      ]);
      // The gateway's own strict schema takes it.
      const full = buildSnapshot({ ...c, version: 1 }, sha256Hex);
      expect(GatewaySnapshot.parse(full).proxies[0]?.excludedRoutes).toEqual(['default', 'news', 'shop']);
    });

    it('a route that fails open (every pool proxy unreachable) is never excluded from', () => {
      const c = workerContent(
        input([blocked('a', ['shop', 'news'])], { routing, protocolVersion: 3, failOpenRoutes: ['shop'] }),
      );
      expect(c.proxies[0]?.excludedRoutes).toEqual(['news']);
      const all = workerContent(
        input([blocked('a', ['shop'])], { routing, protocolVersion: 3, failOpenRoutes: ['shop'] }),
      );
      expect(all.proxies[0]).not.toHaveProperty('excludedRoutes');
    });

    it('a change of excluded routes changes the content digest (a new version is published)', () => {
      const digest = (p: ProxyResource) =>
        contentDigest(prepare(workerContent(input([p], { routing, protocolVersion: 3 }))), sha256Hex);
      expect(digest(blocked('a', ['shop']))).not.toBe(digest(blocked('a')));
      expect(digest(blocked('a', ['shop']))).not.toBe(digest(blocked('a', ['news'])));
      expect(digest(blocked('a', ['gone']))).toBe(digest(blocked('a')));
    });
  });

  describe('suspect (protocol 5): the Healthy condition’s SUSPECT reason, only for sessions that read it', () => {
    const withReason = (name: string, reason: string): ProxyResource => {
      const p = ready(name);
      return {
        ...p,
        status: { ...p.status, conditions: [{ ...HEALTHY_CONDITIONS[0]!, reason }] },
      };
    };
    const entryOf = (p: ProxyResource, protocolVersion: number) =>
      workerContent(input([p], { protocolVersion })).proxies[0];
    it.each<[string, string, number, true | 'absent']>([
      ['ProbeSuspect, protocol 5', 'ProbeSuspect', 5, true],
      ['PassiveSuspect, protocol 5', 'PassiveSuspect', 5, true],
      ['AVAILABLE (ProbeSucceeded): no key at all', 'ProbeSucceeded', 5, 'absent'],
      ['protocol 4 never gets the field (its strict schema refuses it)', 'ProbeSuspect', 4, 'absent'],
      ['protocol 1 never gets the field', 'PassiveSuspect', 1, 'absent'],
    ])('%s', (_n, reason, protocolVersion, expected) => {
      const entry = entryOf(withReason('a', reason), protocolVersion);
      expect(entry && 'suspect' in entry ? entry.suspect : 'absent').toBe(expected);
    });

    it('a suspect proxy stays in the snapshot (Healthy is still True); an old session’s entry is byte for byte what it was', () => {
      const sus = withReason('a', 'ProbeSuspect');
      expect(JSON.stringify(entryOf(sus, 4))).toBe(JSON.stringify(entryOf(ready('a'), 4)));
      expect(JSON.stringify(entryOf(ready('a'), 5))).toBe(JSON.stringify(entryOf(ready('a'), 4)));
      // Both sides' strict schemas take what they are given.
      const full = buildSnapshot(
        { ...workerContent(input([sus], { protocolVersion: 5 })), version: 1 },
        sha256Hex,
      );
      expect(GatewaySnapshot.parse(full).proxies[0]?.suspect).toBe(true);
    });

    it('SUSPECT in or out changes the content digest for protocol 5 only (a new version is published)', () => {
      const digest = (p: ProxyResource, protocolVersion: number) =>
        contentDigest(prepare(workerContent(input([p], { protocolVersion }))), sha256Hex);
      expect(digest(withReason('a', 'ProbeSuspect'), 5)).not.toBe(digest(ready('a'), 5));
      expect(digest(withReason('a', 'PassiveSuspect'), 5)).toBe(digest(withReason('a', 'ProbeSuspect'), 5));
      // An old session is not sent a new version for a change it cannot see.
      expect(digest(withReason('a', 'ProbeSuspect'), 4)).toBe(digest(ready('a'), 4));
    });
  });

  it.each<[string, Partial<ContentInput>, boolean]>([
    ['the same content at another time', { now: new Date('2026-01-01T00:00:30Z') }, true],
    ['another epoch', { epoch: 4 }, false],
    ['another grant', { grant: new Date('2026-01-01T00:04:00Z') }, false],
    ['another routing', { routing: [{ ...DEFAULT_ROUTING[0]!, policy: 'round-robin' }] }, false],
  ])('contentDigest: %s → same %s', (_n, over, same) => {
    const a = contentDigest(prepare(workerContent(input([ready('a')]))), sha256Hex);
    const b = contentDigest(prepare(workerContent(input([ready('a')], over))), sha256Hex);
    expect(a === b).toBe(same);
  });

  it('a grant with less than the margin left (not renewed) is usable until a past instant, the same each pass', () => {
    // A withheld worker's grant is not renewed: 4 s left, a 10 s margin. Contract §3: usableUntil =
    // expiresAt − margin, already past, so nothing is allocated on it whatever the worker's clock.
    const late = { grant: new Date('2026-01-01T00:00:04Z') };
    const first = workerContent(input([ready('a')], late));
    const next = workerContent(input([ready('a')], { ...late, now: new Date('2026-01-01T00:00:01Z') }));
    expect(first.proxies[0]?.usableUntil).toBe('2025-12-31T23:59:54.000Z');
    expect(contentDigest(prepare(next), sha256Hex)).toBe(contentDigest(prepare(first), sha256Hex));
  });
});

describe('nextVersion', () => {
  const content = workerContent(input([ready('a')]));
  const digest = contentDigest(prepare(content), sha256Hex);
  it.each<
    [
      string,
      { version: number; contentDigest: string; sessionId: string | null } | null,
      string,
      string,
      number | null,
    ]
  >([
    ['first snapshot', null, 's1', 'changed', 1],
    [
      'same content, same session',
      { version: 4, contentDigest: digest, sessionId: 's1' },
      's1',
      'unchanged',
      null,
    ],
    ['same content, new session', { version: 4, contentDigest: digest, sessionId: 's0' }, 's1', 'changed', 5],
    ['other content', { version: 4, contentDigest: 'x', sessionId: 's1' }, 's1', 'changed', 5],
  ])('%s', (_n, stored, session, kind, version) => {
    const step = nextVersion(stored, prepare(content), digest, session, sha256Hex);
    expect(step.kind).toBe(kind);
    if (step.kind === 'changed') {
      expect(step.full.version).toBe(version);
      expect(GatewaySnapshot.safeParse(step.full).success).toBe(true);
    }
  });
});

describe('chooseMessage: deltas name their base and carry the resulting checksum', () => {
  const many = Array.from({ length: 50 }, (_, i) => ready(`p${String(i).padStart(3, '0')}`));
  const signed = (owned: ProxyResource[], version: number, over: Partial<ContentInput> = {}) => {
    const prepared = prepare(workerContent(input(owned, over)));
    // The gateway's own builder: the fast path must sign exactly what it would.
    return { full: buildSnapshot({ ...prepared.content, version }, sha256Hex), prepared };
  };
  const one = signed(many, 1);
  const two = signed([...many.slice(1), ready('zz')], 2);
  const v1 = one.full;
  const v2 = two.full;
  const base = { version: 1, prepared: one.prepared };

  it('one proxy changed: a delta on the exact base that applies and verifies, under 1 KiB', () => {
    const m = chooseMessage(base, v2, two.prepared);
    expect(m.kind).toBe('delta');
    if (m.kind !== 'delta') return;
    expect(GatewayDelta.safeParse(m.message).success).toBe(true);
    expect(m.message).toMatchObject({
      baseVersion: 1,
      version: 2,
      removals: ['p000'],
      checksum: v2.checksum,
    });
    expect(m.message.upserts.map((p) => p.name)).toEqual(['zz']);
    expect(m.bytes).toBeLessThanOrEqual(1024);
    const applied = applyDelta(v1, m.message, sha256Hex);
    expect(applied.ok && applied.snapshot.checksum).toBe(v2.checksum);
  });
  it('a proxy newly unreachable for a route: a delta upserting just that proxy, which verifies', () => {
    const routing = [{ ...DEFAULT_ROUTING[0]!, name: 'shop' }];
    const withUnreachable = (p: ProxyResource, unreachableRoutes: string[]): ProxyResource => ({
      ...p,
      status: { ...p.status, unreachableRoutes },
    });
    const at = (owned: ProxyResource[], version: number) =>
      signed(owned, version, { routing, protocolVersion: 3 });
    const before = at(many, 1);
    const after = at(
      many.map((p) => (p.name === 'p007' ? withUnreachable(p, ['shop']) : p)),
      2,
    );
    const m = chooseMessage({ version: 1, prepared: before.prepared }, after.full, after.prepared);
    expect(m.kind).toBe('delta');
    if (m.kind !== 'delta') return;
    expect(GatewayDelta.safeParse(m.message).success).toBe(true);
    expect(m.message.upserts).toEqual([expect.objectContaining({ name: 'p007', excludedRoutes: ['shop'] })]);
    expect(m.message.removals).toEqual([]);
    const applied = applyDelta(before.full, m.message, sha256Hex);
    expect(applied.ok && applied.snapshot.checksum).toBe(after.full.checksum);
    expect(applied.ok && applied.snapshot.proxies.find((p) => p.name === 'p007')?.excludedRoutes).toEqual([
      'shop',
    ]);
    // And back: reachable again, the upsert carries the entry without the field.
    const back = at(many, 3);
    const m2 = chooseMessage({ version: 2, prepared: after.prepared }, back.full, back.prepared);
    expect(m2.kind === 'delta' && m2.message.upserts.map((p) => [p.name, 'excludedRoutes' in p])).toEqual([
      ['p007', false],
    ]);
  });
  it('a proxy turning SUSPECT and back: a delta upserting just that proxy, which verifies', () => {
    const withReason = (p: ProxyResource, reason: string): ProxyResource => ({
      ...p,
      status: { ...p.status, conditions: [{ ...HEALTHY_CONDITIONS[0]!, reason }] },
    });
    const at = (owned: ProxyResource[], version: number) => signed(owned, version, { protocolVersion: 5 });
    const before = at(many, 1);
    const after = at(
      many.map((p) => (p.name === 'p011' ? withReason(p, 'PassiveSuspect') : p)),
      2,
    );
    const m = chooseMessage({ version: 1, prepared: before.prepared }, after.full, after.prepared);
    expect(m.kind).toBe('delta');
    if (m.kind !== 'delta') return;
    expect(GatewayDelta.safeParse(m.message).success).toBe(true);
    expect(m.message.upserts).toEqual([expect.objectContaining({ name: 'p011', suspect: true })]);
    expect(m.message.removals).toEqual([]);
    const applied = applyDelta(before.full, m.message, sha256Hex);
    expect(applied.ok && applied.snapshot.checksum).toBe(after.full.checksum);
    const back = at(many, 3);
    const m2 = chooseMessage({ version: 2, prepared: after.prepared }, back.full, back.prepared);
    expect(m2.kind === 'delta' && m2.message.upserts.map((p) => [p.name, 'suspect' in p])).toEqual([
      ['p011', false],
    ]);
    if (m2.kind !== 'delta' || !applied.ok) throw new Error('expected a delta on an applied base');
    const applied2 = applyDelta(applied.snapshot, m2.message, sha256Hex);
    expect(applied2.ok && applied2.snapshot.checksum).toBe(back.full.checksum);
  });
  it('no base (new session or first snapshot): full', () => {
    expect(chooseMessage(null, v2, two.prepared).kind).toBe('full');
  });
  it('every proxy changed (a renewed grant): full, since the delta would be as large', () => {
    const renewed = signed(many, 2, { grant: new Date('2026-01-01T00:04:00Z') });
    const m = chooseMessage(base, renewed.full, renewed.prepared);
    expect(m.kind).toBe('full');
    expect(Math.abs(m.bytes - jsonBytes(renewed.full)) / jsonBytes(renewed.full)).toBeLessThan(0.1);
  });
});
