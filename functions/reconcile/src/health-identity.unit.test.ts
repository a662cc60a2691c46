// Health state belongs to one instance incarnation: the probe (decideHealth keyed by healthInstanceKey) and
// reconcile (storeHealthSource) over the in-memory store and fake provider, across the ways a proxy ends
// up on another instance. Managed instance names are derived from the UID, so a replacement has the SAME
// providerId as the instance it replaces; an external proxy moves when its endpoint is edited.
import { beforeEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { healthInstanceKey } from '../../../shared/src/domain/health/instance-key.js';
import { decideHealth, type ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import { ACTIVE_TRACKS } from '../../../shared/src/domain/health/verdict-reason.js';
import { isHealthy } from '../../../shared/src/domain/leases/health.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import { defaultPollIntervals as iv } from '../../../shared/src/domain/reconcile/types.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { FakeProvider } from '../../../shared/src/testing/fake-provider.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { InMemoryReplacementSlots } from '../../../shared/src/testing/in-memory-replacement-slots.js';
import { aProxy, externalSpec, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { seedOf } from '../../probe/src/probe-pass.js';
import { handleReconcile, type ReconcileDeps } from './handler.js';
import { storeHealthSource } from './health-source.js';

const script = { ok: true as const, script: '#!/bin/sh\n', digest: 'sha256:x', credentialsSecret: null };

function setup() {
  const store = new InMemoryProxyStore();
  const provider = new FakeProvider();
  const clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
  const health = new Map<string, ProxyHealthState>();
  const deps: ReconcileDeps = {
    store,
    providers: new Map([['gce', provider]]),
    cloudInit: { resolve: async () => script, versionState: async () => 'readable' },
    health: storeHealthSource({ get: async (name) => health.get(name) ?? null }),
    clock,
    intervals: iv,
    publisher: { publish: async () => {} },
    log: memoryLogger(),
    maxPasses: 6,
    slots: new InMemoryReplacementSlots(0, clock),
  };
  const doc = async () => (await store.get('p1'))!.proxy;
  /** One probe of p1 as the probe pass decides it (BASIC and EGRESS alike), stored like the pass does. */
  const probe = async (ok: boolean) => {
    const p = await doc();
    clock.advance(1000);
    const dec = decideHealth(
      health.get(p.name) ?? null,
      p.name,
      healthInstanceKey(p),
      seedOf(p),
      [
        { track: 'BASIC', ok, latencyMs: 20 },
        { track: 'EGRESS', ok, latencyMs: 20 },
      ],
      ACTIVE_TRACKS,
      p.spec.healthCheck,
      clock.now(),
    );
    if (dec.write) health.set(p.name, dec.next);
    return dec;
  };
  const run = (reason: 'requeue' | 'created' | 'spec-changed' | 'health-transition' = 'requeue') =>
    handleReconcile(deps, { proxy: 'p1', reason });
  /** Reconcile passes (DeletionPoll apart) until the proxy has a running instance again. */
  const settle = async () => {
    for (let i = 0; i < 10; i++) {
      provider.bootAll();
      if ((await doc()).status.phase !== 'Provisioning' && (await doc()).status.phase !== 'Pending') return;
      clock.advance(iv.DeletionPoll);
      await run();
    }
    throw new Error('never settled');
  };
  return { store, provider, clock, health, doc, probe, run, settle };
}

const healthyCondition = (p: ProxyResource) => p.status.conditions.find((c) => c.type === 'Healthy');

describe('health identity: a managed proxy replaced by an instance of the same name', () => {
  let t: ReturnType<typeof setup>;
  beforeEach(async () => {
    t = setup();
    await t.store.create(aProxy({ name: 'p1', spec: managedSpec() }));
    await t.run('created');
    t.provider.bootAll();
    await t.run();
    await t.probe(true);
    await t.run('health-transition');
    expect((await t.doc()).status.phase).toBe('Ready');
  });

  const replacements: Array<[string, (x: ReturnType<typeof setup>) => Promise<void>]> = [
    [
      'a spec change (replace)',
      async (x) => {
        const before = (await x.store.get('p1'))!;
        await x.store.replaceSpec('p1', managedSpec({ machineType: 'e2-medium' }), before.version);
        await x.run('spec-changed');
      },
    ],
    [
      'the instance vanishing (drift recreate)',
      async (x) => {
        await x.provider.delete((await x.doc()).status.providerId!);
        await x.provider.get((await x.doc()).status.providerId!); // the deletion finishes
        x.clock.advance(iv.DriftPoll);
        await x.run();
      },
    ],
    [
      'a preemption (Terminated → deleted → recreated)',
      async (x) => {
        x.provider.setState((await x.doc()).status.providerId!, 'Terminated');
        x.clock.advance(iv.DriftPoll);
        await x.run();
      },
    ],
  ];

  it.each(replacements)(
    'after %s the new instance has no verdict until it is probed',
    async (_l, replace) => {
      const old = await t.doc();
      const oldKey = healthInstanceKey(old);
      await replace(t);
      await t.settle();
      const p = await t.doc();
      expect(t.provider.created).toBe(2);
      expect(p.status.providerId).toBe(old.status.providerId); // the same name: only the incarnation differs
      // Reconcile did not hand the old instance's verdict to the new one: not Ready, not leasable.
      expect(healthyCondition(p)).toBeUndefined();
      expect(p.status.phase).toBe('Provisioned');
      expect(isHealthy(p)).toBe(false);
      expect(healthInstanceKey(p)).not.toBe(oldKey);
      // The probe starts fresh counters: one failure of the new instance is not SUSPECT-after-AVAILABLE.
      const first = await t.probe(false);
      expect(first.next.instance).toBe(healthInstanceKey(p));
      expect(first.next.verdict).toBeNull();
      expect(first.next.tracks.BASIC).toEqual({ verdict: null, consecutiveOk: 0, consecutiveFail: 1 });
      // Its own verdict arrives as usual.
      await t.probe(true);
      await t.run('health-transition');
      expect((await t.doc()).status.phase).toBe('Ready');
    },
  );

  it('a state stored by an older probe (keyed by the bare providerId) resets counters once, never the status', async () => {
    const p = await t.doc();
    t.health.set('p1', { ...t.health.get('p1')!, instance: p.status.providerId! });
    t.clock.advance(iv.DriftPoll);
    await t.run();
    expect((await t.doc()).status.phase).toBe('Ready'); // no verdict about this key: status kept as it is
    const first = await t.probe(true);
    expect(first.next.instance).toBe(healthInstanceKey(p));
    expect(first.next.tracks.BASIC).toEqual({ verdict: 'AVAILABLE', consecutiveOk: 1, consecutiveFail: 0 });
    await t.run('health-transition');
    expect((await t.doc()).status.phase).toBe('Ready');
  });

  it('a steady instance keeps its key, its counters and its verdict across passes', async () => {
    const key = healthInstanceKey(await t.doc());
    t.clock.advance(iv.DriftPoll);
    await t.run();
    expect(healthInstanceKey(await t.doc())).toBe(key);
    expect((await t.probe(true)).write).toBe(false);
    expect((await t.doc()).status.phase).toBe('Ready');
  });
});

describe('health identity: an external proxy moved to another endpoint', () => {
  let t: ReturnType<typeof setup>;
  beforeEach(async () => {
    t = setup();
    await t.store.create(aProxy({ name: 'p1', spec: externalSpec() }));
    await t.run('created');
    await t.probe(true);
    await t.run('health-transition');
    expect((await t.doc()).status).toMatchObject({ phase: 'Ready', latencyMillis: 20 });
  });

  it.each([
    ['another host', { host: '198.51.100.9', port: 8080 }],
    ['another port', { host: '203.0.113.7', port: 9090 }],
  ])('moved to %s: the old Healthy=True, latency and check time are dropped', async (_l, endpoint) => {
    const before = (await t.store.get('p1'))!;
    await t.store.replaceSpec('p1', externalSpec({ endpoint }), before.version);
    await t.run('spec-changed');
    const p = await t.doc();
    expect(p.status.ip).toBe(endpoint.host);
    expect(healthyCondition(p)).toBeUndefined();
    expect(p.status).toMatchObject({ phase: 'Provisioned', latencyMillis: null, lastHealthCheckTime: null });
    expect(isHealthy(p)).toBe(false);
    // The new endpoint's own verdict is folded in once the probe has one.
    await t.probe(true);
    await t.run('health-transition');
    expect((await t.doc()).status.phase).toBe('Ready');
  });

  it("deleted and created again under the same name and endpoint: not Ready on the deleted one's verdict", async () => {
    // No probe tick listed the fleet while the name was gone, so nothing pruned health/p1.
    const before = (await t.store.get('p1'))!;
    await t.store.requestDeletion('p1', t.clock.now(), before.version);
    await t.run();
    expect(await t.store.get('p1')).toBeNull();
    await t.store.create(aProxy({ name: 'p1', spec: externalSpec() }));
    await t.run('created');
    const p = await t.doc();
    expect(healthyCondition(p)).toBeUndefined();
    expect(p.status).toMatchObject({ phase: 'Provisioned', latencyMillis: null });
    expect(isHealthy(p)).toBe(false);
    // Its own probe starts from zero counters and makes its own verdict.
    expect((await t.probe(true)).next.tracks.BASIC?.consecutiveOk).toBe(1);
    await t.run('health-transition');
    expect((await t.doc()).status.phase).toBe('Ready');
  });

  it('a spec edit that keeps the endpoint keeps the verdict', async () => {
    const before = (await t.store.get('p1'))!;
    await t.store.replaceSpec('p1', externalSpec({ capacity: 9 }), before.version);
    await t.run('spec-changed');
    expect((await t.doc()).status).toMatchObject({ phase: 'Ready', latencyMillis: 20 });
  });
});
