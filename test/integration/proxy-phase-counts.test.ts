// countProxiesByPhase against the Firestore emulator: aggregation queries over status.phase, one per
// phase, every phase present (0 when none), and what the gauge makes of them on a scrape.
import { Firestore } from '@google-cloud/firestore';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { promProxyPhaseGauge } from '../../functions/api/src/fleet/phase-gauge.js';
import { countProxiesByPhase } from '../../shared/src/adapters/firestore/proxy-phase-counts.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import type { Phase } from '../../shared/src/domain/proxy.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { testProjectId } from '../support/emulators.js';

const db = new Firestore({ projectId: testProjectId() });
const store = new FirestoreProxyStore(db);
afterAll(() => db.terminate());

const inPhase = (name: string, phase: Phase) => store.create(aProxy({ name, status: { phase } }));

describe('proxies by phase', () => {
  it('counts every phase from the store, zeros included', async () => {
    await Promise.all([
      inPhase('r1', 'Ready'),
      inPhase('r2', 'Ready'),
      inPhase('r3', 'Ready'),
      inPhase('u1', 'Unhealthy'),
      inPhase('f1', 'Failed'),
    ]);
    expect(await countProxiesByPhase(db)).toEqual({
      Pending: 0,
      Provisioning: 0,
      Provisioned: 0,
      Ready: 3,
      Unhealthy: 1,
      Deleting: 0,
      Failed: 1,
    });
  });

  it('a scrape reads the store as it is now; a failed count keeps the last values and says so', async () => {
    const registry = new Registry();
    const errors: unknown[] = [];
    let fail = false;
    let now = 0;
    let counted = 0;
    promProxyPhaseGauge(
      registry,
      () => {
        counted++;
        return fail ? Promise.reject(new Error('firestore down')) : countProxiesByPhase(db);
      },
      { maxAgeMs: 10_000, nowMs: () => now, onError: (e) => errors.push(e) },
    );
    await inPhase('p1', 'Pending');
    const first = await registry.metrics();
    expect(first).toContain('proxyplane_proxies{phase="Ready"} 3');
    expect(first).toContain('proxyplane_proxies{phase="Pending"} 1');
    await inPhase('r4', 'Ready');
    // Within maxAgeMs a scrape reuses the count: no query, the numbers of the last one.
    now = 9_999;
    expect(await registry.metrics()).toContain('proxyplane_proxies{phase="Ready"} 3');
    expect(counted).toBe(1);
    now = 10_000;
    expect(await registry.metrics()).toContain('proxyplane_proxies{phase="Ready"} 4');
    expect(counted).toBe(2);
    fail = true;
    now = 20_000;
    expect(await registry.metrics()).toContain('proxyplane_proxies{phase="Ready"} 4');
    expect(errors).toHaveLength(1);
    // A failed count waits out maxAgeMs too (an outage is no reason to ask on every scrape), then asks again.
    fail = false;
    await inPhase('r5', 'Ready');
    now = 29_999;
    expect(await registry.metrics()).toContain('proxyplane_proxies{phase="Ready"} 4');
    expect(counted).toBe(3);
    now = 30_000;
    expect(await registry.metrics()).toContain('proxyplane_proxies{phase="Ready"} 5');
    expect(counted).toBe(4);
    expect(errors).toHaveLength(1);
  });
});
