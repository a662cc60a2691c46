// Brief invariant 2: a steady fleet (nothing changed) costs zero Firestore writes per tick. The requeue
// sweep runs for real against Firestore and drift-polls every steady proxy; each publish runs a full
// reconcile pass (provider.get against the Compute emulator included). Not one document changes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleReconcile } from '../../functions/reconcile/src/handler.js';
import { runSweep } from '../../functions/requeue/src/sweep.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { type ReconcilePlane, startReconcilePlane } from './reconcile-plane.js';

const FLEET = 8;
const names = Array.from({ length: FLEET }, (_, i) => `steady-${i}`);
let plane: ReconcilePlane;

beforeAll(async () => {
  plane = await startReconcilePlane({ bootDelayMs: 200 });
  for (const name of names) {
    await plane.store.create(
      aProxy({ name, uid: crypto.randomUUID(), spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }) }),
    );
  }
  // Bring the fleet to steady state the way the passes would.
  for (let round = 0; round < 30; round++) {
    await Promise.all(names.map((proxy) => handleReconcile(plane.deps, { proxy, reason: 'requeue' })));
    const fleet = await plane.store.list({ phase: 'Provisioned' });
    if (fleet.length === FLEET && fleet.every((p) => p.status.nextReconcileAt === null)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('the fleet never became steady');
}, 60_000);
afterAll(() => plane?.stop());

describe('a steady fleet', () => {
  it('is drift-polled by the sweep (real reconcile passes) at zero Firestore writes', async () => {
    const versions = async () =>
      Object.fromEntries(await Promise.all(names.map(async (n) => [n, (await plane.store.get(n))!.version])));
    const before = await versions();
    const writesBefore = plane.counting.writes.length;
    const getsBefore = plane.compute.admin.counters().get;
    let passes = 0;
    const report = await runSweep(
      {
        store: plane.store,
        publisher: {
          publish: async (r) => {
            const outcome = await handleReconcile(plane.deps, r);
            passes++;
            expect(outcome.last).toBe('unchanged');
          },
        },
        clock: systemClock,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
        log: memoryLogger(),
        tickPeriodMs: 3_000,
        marginMs: 100,
        pollMs: 250,
        driftPollMs: 1_000,
        batch: 100,
        maxBatch: 1_000,
        // The steady listing's default bound is half the 3 s window: one slow query on the shared emulator
        // skipped every drift slot. What it costs is not what this test is about.
        listingTimeoutMs: 60_000,
      },
      systemClock.now(),
    );
    expect(report.drift).toBeGreaterThanOrEqual(2 * FLEET);
    expect(passes).toBe(report.drift);
    expect(plane.compute.admin.counters().get - getsBefore).toBeGreaterThanOrEqual(2 * FLEET);
    expect(plane.counting.writes.length - writesBefore).toBe(0);
    expect(await versions()).toEqual(before);
  });
});
