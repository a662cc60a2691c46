// Health state belongs to one instance incarnation: the probe (decideHealth keyed by instanceOf) and
// reconcile (storeHealthSource) over the in-memory store and fake provider, across the ways a proxy ends
// up on another instance. Managed instance names are derived from the UID, so a replacement has the SAME
// providerId as the instance it replaces; an external proxy moves when its endpoint is edited.
import { beforeEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { decideHealth, type ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import { isHealthy } from '../../../shared/src/domain/leases/health.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import { defaultPollIntervals as iv } from '../../../shared/src/domain/reconcile/types.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { FakeProvider } from '../../../shared/src/testing/fake-provider.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { aProxy, externalSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { instanceOf, seedOf } from '../../probe/src/probe-pass.js';
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
    cloudInit: { resolve: async () => script },
    health: storeHealthSource({ get: async (name) => health.get(name) ?? null }),
    clock,
    intervals: iv,
    publisher: { publish: async () => {} },
    log: memoryLogger(),
    maxPasses: 6,
  };
  const doc = async () => (await store.get('p1'))!.proxy;
  /** One probe of p1 as the probe pass decides it (BASIC and EGRESS alike), stored like the pass does. */
  const probe = async (ok: boolean) => {
    const p = await doc();
    clock.advance(1000);
    const dec = decideHealth(
      health.get(p.name) ?? null,
      p.name,
      instanceOf(p),
      seedOf(p),
      [
        { track: 'BASIC', ok, latencyMs: 20 },
        { track: 'EGRESS', ok, latencyMs: 20 },
      ],
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

  it('a spec edit that keeps the endpoint keeps the verdict', async () => {
    const before = (await t.store.get('p1'))!;
    await t.store.replaceSpec('p1', externalSpec({ capacity: 9 }), before.version);
    await t.run('spec-changed');
    expect((await t.doc()).status).toMatchObject({ phase: 'Ready', latencyMillis: 20 });
  });
});
