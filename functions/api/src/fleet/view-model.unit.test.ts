import { describe, expect, it } from 'vitest';
import { healthInstanceKey } from '../../../../shared/src/domain/health/instance-key.js';
import type { ProxyResource } from '../../../../shared/src/domain/proxy.js';
import { buildDetail, recentEvents } from './detail.js';
import { InMemoryFleetFeed } from './feed.js';
import type { FleetRow } from './fleet-schemas.js';
import { rowHtml } from './page.js';
import { sparkPoints } from './sparkline.js';
import { FLEET_CSS } from './styles.js';
import { ago, managed, NOW, populatedFleet, twoProxies } from './testing/fleet-fixtures.js';
import { buildFleetView, UNREADABLE_STATE } from './view-model.js';

const inputs = () => twoProxies().inputs();

describe('buildFleetView', () => {
  it.each([
    ['http', '203.0.113.7', '203.0.113.7:8080'],
    ['socks5', '203.0.113.7', 'socks5://203.0.113.7:8080'],
    // Unbracketed, `2001:db8::1:8080` reads as another address with no port.
    ['http', '2001:db8::1', '[2001:db8::1]:8080'],
  ] as const)('an external %s endpoint at %s is located at %s', (protocol, host, location) => {
    const f = new InMemoryFleetFeed();
    const p = managed('x');
    f.proxies.set('x', {
      ...p,
      spec: {
        mode: 'external',
        endpoint: { host, port: 8080, protocol },
        attributes: {},
        capacity: 3,
        gatewayPool: false,
        cordoned: false,
        healthCheck: p.spec.healthCheck,
      },
    });
    expect(buildFleetView(f.inputs(), NOW).rows[0]?.location).toBe(location);
  });

  it('one row per proxy by name, with tiers, history, live leases and cooldowns only, and the owner', () => {
    const v = buildFleetView(inputs(), NOW);
    expect(v.rows.map((r) => r.name)).toEqual(['a', 'b']);
    expect(v.phases).toEqual({ Ready: 2 });
    const a = v.rows[0]!;
    expect(a).toMatchObject({
      tiers: { BASIC: 'AVAILABLE', EGRESS: 'SUSPECT' },
      healthy: true,
      latencyHistory: [90, 40],
      activeLeases: 1,
      capacity: 3,
      cooldowns: [{ target: 'shop.example', reason: 'rate_limited' }],
      owner: { owner: 'gw-1' },
      unreachableRoutes: [],
      location: 'us-central1-a',
      changedAt: ago(300).toISOString(),
    });
    expect(v.rows[1]).toMatchObject({
      tiers: {},
      verdict: null,
      owner: null,
      activeLeases: 0,
      latencyHistory: [],
      unreachableRoutes: ['shop'],
    });
  });

  it('shows no owner on a proxy created again under a name still owned for the deleted one', () => {
    // The record keeps the deleted proxy's uid: the lease service leases the new one (outside the pool),
    // and the page showed it as the gateway's, draining.
    const i = inputs();
    const a = i.proxies.get('a')!;
    const o = { owner: 'gw-1', since: 3, drainEpoch: 4 };
    const view = (uid: string | null) =>
      buildFleetView({ ...i, ownership: new Map([['a', { ...o, uid }]]) }, NOW).rows[0]!.owner;
    expect(view('00000000-0000-4000-8000-0000000000aa')).toBeNull();
    expect(view(a.uid)).toEqual(o);
    // A record stored before uids were kept: the proxy of its name.
    expect(view(null)).toEqual(o);
  });
});

describe('buildFleetView at fleet size', () => {
  it('reads each stored cooldown once per view, not once per proxy', () => {
    // The page rebuilds its view on every change while watched, on the API instance that serves leases:
    // a scan of every cooldown for every row was proxies × cooldowns (5,000 × 100,000 at crawler volumes).
    const f = new InMemoryFleetFeed();
    for (let i = 0; i < 50; i++) f.proxies.set(`p${i}`, managed(`p${i}`));
    const stored = Array.from({ length: 200 }, (_, i) => ({
      proxy: `p${i % 50}`,
      proxyUid: null,
      target: `t${i}.example`,
      until: new Date(NOW.getTime() + 60_000),
      reason: 'rate_limited' as const,
      leaseId: `l${i}`,
      reportedAt: ago(10),
    }));
    let reads = 0;
    const counted = new Proxy(stored, {
      get(target, prop, receiver) {
        if (typeof prop === 'string' && /^\d+$/.test(prop)) reads++;
        return Reflect.get(target, prop, receiver);
      },
    });
    const v = buildFleetView({ ...f.inputs(), cooldowns: counted }, NOW);
    expect(v.rows.map((r) => r.cooldowns.length)).toEqual(Array(50).fill(4));
    expect(reads).toBeLessThanOrEqual(stored.length);
  });
});

describe('a proxy created again under a deleted one’s name', () => {
  it('shows neither the deleted one’s leases nor its cooldowns, but those stored without a uid', () => {
    const OLD = '00000000-0000-4000-8000-00000000dead';
    const f = new InMemoryFleetFeed();
    const p = managed('a');
    f.proxies.set('a', p);
    f.leaseState.set('a', [
      { leaseId: 'old', expiresAt: ago(-60), exclusive: true, proxyUid: OLD },
      { leaseId: 'mine', expiresAt: ago(-60), exclusive: false, proxyUid: p.uid },
      { leaseId: 'legacy', expiresAt: ago(-60), exclusive: false },
    ]);
    const cooldown = (target: string, proxyUid: string | null) => ({
      proxy: 'a',
      proxyUid,
      target,
      until: ago(-120),
      reason: 'banned' as const,
      leaseId: 'old',
      reportedAt: ago(10),
    });
    f.cooldowns = [
      cooldown('old.example', OLD),
      cooldown('mine.example', p.uid),
      cooldown('legacy.example', null),
    ];
    const row = buildFleetView(f.inputs(), NOW).rows[0];
    expect(row?.activeLeases).toBe(2);
    expect(row?.cooldowns.map((c) => c.target)).toEqual(['mine.example', 'legacy.example']);
    const events = recentEvents(p, f.inputs(), NOW).filter((e) => e.kind === 'cooldown');
    expect(events.map((e) => e.text.split(' ')[2])).toEqual(['mine.example', 'legacy.example']);
  });
});

describe('the health of a replaced or re-created proxy', () => {
  // health/{name} is keyed by name: the state stored is the previous instance's until the probe files one
  // about this instance. Reconcile reads it only when its instance is the proxy's (conditions.ts
  // verdictFor); the page shows it on the same terms — not the dead VM's tiers, latency and history.
  const withStatus = (p: ProxyResource, status: Partial<ProxyResource['status']>): ProxyResource => ({
    ...p,
    status: { ...p.status, ...status },
  });
  const notShown = (f: InMemoryFleetFeed, p: ProxyResource) => {
    f.proxies.set(p.name, p);
    const row = buildFleetView(f.inputs(), NOW).rows.find((r) => r.name === p.name);
    expect(row).toMatchObject({ verdict: null, tiers: {}, egressProblem: null, latencyHistory: [] });
    const detail = buildDetail(p, f.inputs(), NOW);
    expect(detail.health).toBeNull();
    expect(detail.events.filter((e) => e.kind === 'health' || e.kind === 'latency')).toEqual([]);
    return row!;
  };

  it('a managed one being replaced (Provisioning, no running instance) shows none of the old VM’s', () => {
    const f = twoProxies();
    const a = f.proxies.get('a')!;
    const replacing = withStatus(a, {
      phase: 'Provisioning',
      latencyMillis: null,
      conditions: [
        {
          type: 'Provisioned',
          status: 'False',
          reason: 'Provisioning',
          message: 'replacing',
          lastTransitionTime: ago(20),
          observedGeneration: 2,
        },
      ],
    });
    expect(healthInstanceKey(replacing)).toBe('');
    expect(notShown(f, replacing).latencyMillis).toBeNull(); // not the health document's 40 ms either
  });

  it('a managed one whose new instance runs shows none of the old one’s until the probe files its own', () => {
    const f = twoProxies();
    const a = f.proxies.get('a')!;
    const renewed = withStatus(a, {
      conditions: a.status.conditions.map((c) =>
        c.type === 'Provisioned' ? { ...c, lastTransitionTime: ago(30) } : c,
      ),
    });
    notShown(f, renewed);
  });

  it('an external one deleted and created again under its name shows none of the deleted one’s', () => {
    const f = populatedFleet();
    const c = f.proxies.get('c')!;
    const again = { ...c, uid: '00000000-0000-4000-8000-00000000beef' };
    notShown(f, again);
  });

  it('its own is shown', () => {
    const f = twoProxies();
    const a = f.proxies.get('a')!;
    expect(buildDetail(a, f.inputs(), NOW).health?.verdict).toBe('SUSPECT');
    expect(buildFleetView(f.inputs(), NOW).rows[0]).toMatchObject({ name: 'a', verdict: 'SUSPECT' });
  });
});

/** Proxy a of twoProxies with its Healthy condition set to `status` (`reason`). */
const healthyAs = (status: 'True' | 'False', reason: string): FleetRow => {
  const f = twoProxies();
  const a = f.proxies.get('a')!;
  const conditions = a.status.conditions.map((c) => (c.type === 'Healthy' ? { ...c, status, reason } : c));
  f.proxies.set('a', { ...a, status: { ...a.status, conditions } });
  return buildFleetView(f.inputs(), NOW).rows[0]!;
};
const healthyTd = (r: FleetRow) => rowHtml(r, NOW).match(/<td data-col="healthy">(.*?)<\/td>/)![1];

describe('the Healthy cell', () => {
  // A proxy the gateways keep failing through looked healthy: Healthy=True with a SUSPECT reason was a
  // green `yes`, and PassiveFailures a bare `no` beside two green tiers.
  it.each([
    ['True', 'PassiveSuspect', '<span class="badge b-suspect" title="PassiveSuspect">suspect</span>'],
    ['True', 'ProbeSuspect', '<span class="badge b-suspect" title="ProbeSuspect">suspect</span>'],
    ['True', 'ProbeSucceeded', '<span class="badge b-ok" title="ProbeSucceeded">yes</span>'],
    ['False', 'PassiveFailures', '<span class="badge b-bad" title="PassiveFailures">no</span>'],
    ['False', 'ProbeFailed', '<span class="badge b-bad" title="ProbeFailed">no</span>'],
  ] as const)('Healthy=%s (%s) is %s', (status, reason, html) => {
    const row = healthyAs(status, reason);
    expect(row.healthyReason).toBe(reason);
    expect(healthyTd(row)).toBe(html);
  });

  it('without a Healthy condition: no reason, a dash', () => {
    const f = new InMemoryFleetFeed();
    const p = managed('a');
    f.proxies.set('a', { ...p, status: { ...p.status, conditions: [] } });
    const row = buildFleetView(f.inputs(), NOW).rows[0]!;
    expect(row).not.toHaveProperty('healthyReason');
    expect(healthyTd(row)).toBe('<span class="muted">–</span>');
  });

  it('SUSPECT is styled beside the other badges', () => {
    expect(FLEET_CSS).toMatch(/\.b-suspect[,\s{]/);
  });
});

describe('a lease state that does not decode', () => {
  it('shows the proxy full (its capacity) and says so; its detail lists no lease', () => {
    const f = new InMemoryFleetFeed();
    const p = managed('a');
    f.proxies.set('a', p);
    f.leaseState.set('a', UNREADABLE_STATE);
    const row = buildFleetView(f.inputs(), NOW).rows[0];
    expect(row).toMatchObject({ activeLeases: p.spec.capacity, leaseStateInvalid: true });
    expect(rowHtml(row!, NOW)).toContain('invalid state');
    expect(buildDetail(p, f.inputs(), NOW).leases).toEqual([]);
  });
});

describe('a cordoned proxy', () => {
  it('is shown as such (row and page), and an uncordoned one says nothing about it', () => {
    const f = new InMemoryFleetFeed();
    const p = managed('a');
    f.proxies.set('a', { ...p, spec: { ...p.spec, cordoned: true } });
    f.proxies.set('b', managed('b'));
    const [a, b] = buildFleetView(f.inputs(), NOW).rows;
    expect(a).toMatchObject({ name: 'a', cordoned: true });
    expect(rowHtml(a!, NOW)).toContain('>cordoned</span>');
    expect(b).not.toHaveProperty('cordoned');
    expect(rowHtml(b!, NOW)).not.toContain('cordoned');
  });
});

describe('recentEvents', () => {
  it('derives the events from stored timestamps, newest first', () => {
    const i = inputs();
    const events = recentEvents(i.proxies.get('a')!, i, NOW).map((e) => `${e.kind}: ${e.text}`);
    expect(events).toEqual([
      'cooldown: cooldown for shop.example (rate_limited), until 2026-02-01T12:02:00.000Z',
      'health: health verdict SUSPECT',
      'latency: latency reported: 40 ms',
      'condition: Healthy=True (ProbeSucceeded): ok',
      'condition: Provisioned=True (Created): up',
      'created: created (managed)',
      'cooldown: cooldown for old.example (banned), ended',
      'latency: latency reported: 90 ms',
    ]);
  });
});

describe('sparkPoints', () => {
  it.each([
    [[10, 20, 30], '0.0,16.0 40.0,9.0 80.0,2.0'],
    [[5, 5], '0.0,16.0 80.0,16.0'],
  ])('%j → %s', (values, points) => {
    expect(sparkPoints(values)).toBe(points);
  });
});
