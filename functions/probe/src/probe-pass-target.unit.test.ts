// runProbePass with the stored routing: which routes' target checks run through which proxy, what a
// blocked target does to the proxy's state, and what an unreadable routing (null) leaves alone.
import { describe, expect, it } from 'vitest';
import type { ProbeResult } from '../../../shared/src/adapters/probe/proxy-probe.js';
import { healthVerdictOf, type ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import { type RoutingRule, RoutingRules } from '../../../shared/src/messages/gateway-snapshot.js';
import { inMemoryHealthStore } from '../../../shared/src/testing/in-memory-health-store.js';
import { aProxy, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { noOutcomes } from './passive-fixtures.unit.js';
import { type ProbeDeps, runProbePass } from './probe-pass.js';
import { echoUp } from './prober-fixtures.unit.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const HEALTH_URL = 'http://health.example/';

const routing = RoutingRules.parse([
  {
    name: 'shop-de',
    match: { hosts: ['shop.example'] },
    selector: { country: 'de' },
    policy: 'round-robin',
    targetCheck: { url: 'https://shop.example/' },
  },
  {
    name: 'news',
    match: { hosts: ['news.example'] },
    policy: 'round-robin',
    targetCheck: { url: 'http://news.example/', expectedStatus: 204 },
  },
  { name: 'plain', match: { hosts: ['*'] }, policy: 'round-robin' },
]);

/** `blocked`: "<proxy ip> <url>" pairs the target refuses (403); everything else answers as expected. */
function fakes(blocked: Set<string> = new Set()) {
  const health = new Map<string, ProxyHealthState>();
  const publisher = new RecordingReconcilePublisher();
  const asked: string[] = [];
  const observed: Array<{ proxy: string; tier: string; route?: string; ok: boolean }> = [];
  const deps: ProbeDeps = {
    health: inMemoryHealthStore(health),
    publisher,
    secrets: { access: async () => 'user:pass' },
    prober: {
      direct: echoUp,
      handshake: async () => ({ ok: true, latencyMs: 5, status: 200, body: null, failure: null }),
      probe: async (target, opts): Promise<ProbeResult> => {
        asked.push(`${target.host} ${opts.url} ${opts.expectedStatus}`);
        const ok = !blocked.has(`${target.host} ${opts.url}`);
        return { ok, latencyMs: 20, status: ok ? opts.expectedStatus : 403, body: null, failure: null };
      },
    },
    log: { info: () => {}, warn: () => {} },
    recorder: {
      observe: (proxy, o) =>
        void observed.push({ proxy, tier: o.tier, ok: o.ok, ...(o.route ? { route: o.route } : {}) }),
    },
    tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
    concurrency: 4,
    passive: noOutcomes(),
  };
  return { deps, health, publisher, asked, observed };
}

const proxy = (name: string, ip: string, attributes: Record<string, string>) =>
  aProxy({
    name,
    spec: managedSpec({
      gatewayPool: true,
      attributes,
      healthCheck: { url: HEALTH_URL, successThreshold: 2, failureThreshold: 2 },
    }),
    status: { ip, providerId: `zones/z/instances/${name}` },
  });
const DE = proxy('de', '10.0.0.1', { country: 'de' });
const US = proxy('us', '10.0.0.2', { country: 'us' });
const FLEET = [DE, US];

/** Pass `i` over one whole interval (every proxy due once). */
const pass = (deps: ProbeDeps, i: number, routes: readonly RoutingRule[] | null, all = FLEET) => {
  const ms = all[0]!.spec.healthCheck.intervalSeconds * 1000;
  return runProbePass(
    deps,
    all,
    new Date(t0.getTime() + i * ms),
    new Date(t0.getTime() + (i + 1) * ms),
    new Set(),
    routes,
  );
};

describe('runProbePass: the TARGET tier', () => {
  it.each<[string, readonly RoutingRule[] | null, string[]]>([
    [
      'each proxy gets the checks of the routes that select it',
      routing,
      [
        `10.0.0.1 ${HEALTH_URL} 200`,
        '10.0.0.1 http://news.example/ 204',
        '10.0.0.1 https://shop.example/ 200',
        `10.0.0.2 ${HEALTH_URL} 200`,
        '10.0.0.2 http://news.example/ 204',
      ],
    ],
    ['no routing stored: BASIC only', [], [`10.0.0.1 ${HEALTH_URL} 200`, `10.0.0.2 ${HEALTH_URL} 200`]],
    ['routing unreadable: BASIC only', null, [`10.0.0.1 ${HEALTH_URL} 200`, `10.0.0.2 ${HEALTH_URL} 200`]],
  ])('%s', async (_name, routes, asked) => {
    const f = fakes();
    await pass(f.deps, 0, routes);
    expect(f.asked.sort()).toEqual(asked);
    expect(Object.keys(f.health.get('de')!.tracks).sort()).toEqual(
      routes?.length ? ['BASIC', 'TARGET:news', 'TARGET:shop-de'] : ['BASIC'],
    );
  });

  it('a target blocking one proxy: its route becomes unreachable for it alone, published; verdicts stay AVAILABLE', async () => {
    const f = fakes(new Set(['10.0.0.1 http://news.example/']));
    for (let i = 0; i < 2; i++) await pass(f.deps, i, routing);
    const de = f.health.get('de')!;
    const us = f.health.get('us')!;
    expect([de.verdict, us.verdict]).toEqual(['AVAILABLE', 'AVAILABLE']);
    expect(healthVerdictOf(de)).toMatchObject({ healthy: true, unreachableRoutes: ['news'] });
    expect(healthVerdictOf(us)?.unreachableRoutes).toEqual([]);
    expect(us.tracks['TARGET:news']?.verdict).toBe('AVAILABLE');
    expect(f.observed).toContainEqual({ proxy: 'de', tier: 'TARGET', route: 'news', ok: false });

    // The route's check removed: the track is dropped on the next pass, and the change published.
    f.publisher.published.length = 0;
    const withoutCheck = routing.map((r) => (r.name === 'news' ? { ...r, targetCheck: undefined } : r));
    const counts = await pass(f.deps, 2, withoutCheck);
    expect(f.health.get('de')!.tracks['TARGET:news']).toBeUndefined();
    expect(healthVerdictOf(f.health.get('de')!)?.unreachableRoutes).toEqual([]);
    expect(f.publisher.published).toEqual([{ proxy: 'de', reason: 'health-transition' }]);
    expect(counts.written).toBe(2);
  });

  it('an unreadable routing keeps every TARGET track, and a steady fleet writes nothing', async () => {
    const f = fakes(new Set(['10.0.0.1 http://news.example/']));
    for (let i = 0; i < 3; i++) await pass(f.deps, i, routing);
    const before = structuredClone(f.health.get('de')!.tracks);
    expect((await pass(f.deps, 3, null)).written).toBe(0);
    expect(f.health.get('de')!.tracks).toEqual(before);
    expect((await pass(f.deps, 4, routing)).written).toBe(0);
  });
});

// Review (review8): routes only ever pick among gateway-pool proxies (plan-pass.ts poolSpecs: only those
// are in any snapshot), so a check through a proxy outside the pool judges a route no gateway could pick
// it for — a request at the target through a proxy crawlers lease directly, and a status write, for nothing.
describe('runProbePass: the TARGET tier and the gateway pool', () => {
  it('runs no target check through a proxy that is not in the gateway pool', async () => {
    const f = fakes();
    const pooled = aProxy({
      name: 'pooled',
      spec: managedSpec({
        gatewayPool: true,
        attributes: { country: 'de' },
        healthCheck: { url: HEALTH_URL, successThreshold: 2, failureThreshold: 2 },
      }),
      status: { ip: '10.0.0.3', providerId: 'zones/z/instances/pooled' },
    });
    const leasedOnly = { ...DE, spec: { ...DE.spec, gatewayPool: false } };
    await pass(f.deps, 0, routing, [leasedOnly, pooled]);
    // DE (gatewayPool false) may only be leased: BASIC alone.
    expect(f.asked.filter((a) => a.startsWith('10.0.0.1 ')).sort()).toEqual([`10.0.0.1 ${HEALTH_URL} 200`]);
    expect(Object.keys(f.health.get('de')!.tracks)).toEqual(['BASIC']);
    expect(Object.keys(f.health.get('pooled')!.tracks).sort()).toEqual([
      'BASIC',
      'TARGET:news',
      'TARGET:shop-de',
    ]);
  });
});
