// Brief invariant 2: a steady fleet (nothing changed) costs zero Firestore writes per tick. The requeue
// sweep runs for real against Firestore and drift-polls every steady proxy; each publish runs a full
// reconcile pass (provider.get against the Compute emulator included, the probe's health verdict read
// from the health store: the fleet is Ready, as a real steady fleet is, so the passes take the healthy
// path — a proven replacement's slot released, not only the proxy documents). Not one document of the
// project changes: every collection is compared, not only `proxies`.
import type { DocumentReference } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleReconcile, type ReconcileDeps } from '../../functions/reconcile/src/handler.js';
import { storeHealthSource } from '../../functions/reconcile/src/health-source.js';
import { runSweep } from '../../functions/requeue/src/sweep.js';
import { FirestoreHealthStore } from '../../shared/src/adapters/firestore/health-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { healthInstanceKey } from '../../shared/src/domain/health/instance-key.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { countCommitWrites } from '../support/replayed-commit-firestore.js';
import { type ReconcilePlane, startReconcilePlane } from './reconcile-plane.js';

const FLEET = 8;
const names = Array.from({ length: FLEET }, (_, i) => `steady-${i}`);
let plane: ReconcilePlane;
let deps: ReconcileDeps;

/** Each document of the project (every collection, sub-collections too) with its update time. */
async function documents(): Promise<string[]> {
  const out: string[] = [];
  const walk = async (refs: DocumentReference[]) => {
    for (const ref of refs) {
      const snap = await ref.get();
      if (snap.exists) out.push(`${ref.path}@${snap.updateTime?.toMillis()}.${snap.updateTime?.nanoseconds}`);
      for (const sub of await ref.listCollections()) await walk(await sub.listDocuments());
    }
  };
  for (const c of await plane.db.listCollections()) await walk(await c.listDocuments());
  return out.sort();
}

/** The probe's verdict for each provisioned proxy: AVAILABLE, about the instance its status names. */
async function probedHealthy(): Promise<void> {
  const at = new Date();
  const fleet = await plane.store.list({});
  await new FirestoreHealthStore(plane.db).writeMany(
    fleet
      .filter((p) => healthInstanceKey(p) !== '')
      .map((p) => ({
        state: {
          proxy: p.name,
          instance: healthInstanceKey(p),
          tracks: { BASIC: { verdict: 'AVAILABLE' as const, consecutiveOk: 3, consecutiveFail: 0 } },
          verdict: 'AVAILABLE' as const,
          latency: { reportedMs: 12, reportedAt: at },
          egressProblem: null,
          transitionAt: at,
          latencyHistory: [],
          passive: null,
        },
        base: null,
      })),
  );
}

beforeAll(async () => {
  plane = await startReconcilePlane({ bootDelayMs: 200 });
  deps = { ...plane.deps, health: storeHealthSource(new FirestoreHealthStore(plane.db)) };
  for (const name of names) {
    await plane.store.create(
      aProxy({ name, uid: crypto.randomUUID(), spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }) }),
    );
  }
  // Bring the fleet to steady state the way the passes would: provisioned, probed healthy, Ready.
  for (let round = 0; round < 40; round++) {
    await Promise.all(names.map((proxy) => handleReconcile(deps, { proxy, reason: 'requeue' })));
    await probedHealthy();
    const fleet = await plane.store.list({ phase: 'Ready' });
    if (fleet.length === FLEET && fleet.every((p) => p.status.nextReconcileAt === null)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('the fleet never became steady');
}, 60_000);
afterAll(() => plane?.stop());

describe('a steady fleet', () => {
  it('is drift-polled by the sweep (real reconcile passes) at zero Firestore writes', async () => {
    const before = await documents();
    const commits = countCommitWrites(plane.db);
    expect(before.filter((d) => d.startsWith('proxies/'))).toHaveLength(FLEET);
    expect(before.filter((d) => d.startsWith('health/'))).toHaveLength(FLEET);
    const writesBefore = plane.counting.writes.length;
    const getsBefore = plane.compute.admin.counters().get;
    let passes = 0;
    const report = await runSweep(
      {
        store: plane.store,
        publisher: {
          publish: async (r) => {
            const outcome = await handleReconcile(deps, r);
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
    expect(commits.writes).toBe(0);
    expect(await documents()).toEqual(before);
    expect((await plane.store.list({ phase: 'Ready' })).length).toBe(FLEET);
  });
});
