// A pass under a slow Pub/Sub: a hundred live workers each due a snapshot, every publish confirmed only at
// its deadline (10 s). With no budget the pass ran 100 / 8 × 10 s ≈ 130 s, past the function's 120 s
// timeout: upkeep skipped and the tick redelivered. Past SNAPSHOT_PASS_BUDGET_MS it starts no step, and
// the workers it did not reach are failed steps, asked for again at once — a tick by a step-retry request,
// a request by its own redelivery — never left to the next tick, by when their sessions would have lapsed.
// Real Firestore adapters on the emulator; the publisher moves the pass's ManualClock 10 s per publish.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { handleSnapshotEvent, STEP_RETRY_REASON } from '../../functions/snapshot/src/handler.js';
import { SNAPSHOT_PASS_BUDGET_MS, STEP_WORST_MS } from '../../functions/snapshot/src/pass.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_PUBLISH_DEADLINE_MS } from '../../shared/src/adapters/pubsub/publisher.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { countingHolders, firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId('demo-passbudget');
const db = new Firestore({ projectId });
afterAll(() => db.terminate());

const T0 = new Date('2026-12-06T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const event = (data: object) => ({
  data: { message: { data: Buffer.from(JSON.stringify(data)).toString('base64'), messageId: '1' } },
});
const TICK = event({ job: 'snapshot-tick' });
const fleet = Array.from({ length: 100 }, (_, i) => `gw-${String(i).padStart(3, '0')}`);

beforeEach(async () => {
  await clearProject(projectId);
});

/** The fleet live until T0 + 900 s over 8 pool proxies, and pass deps whose publisher is slow on demand. */
async function slowPubSub() {
  const proxies = new FirestoreProxyStore(db);
  const workers = new FirestoreWorkerStore(db);
  await Promise.all(Array.from({ length: 8 }, (_, i) => proxies.create(poolProxy(`pp-${i}`, i + 1))));
  await Promise.all(fleet.map((w) => workers.put(record(w, at(900)), null)));
  const clock = new ManualClock(T0);
  const published: GatewaySnapshotMessage[] = [];
  const log = memoryLogger();
  const deps = { ...firestorePassDeps(db, clock, published), log };
  deps.newHolder = countingHolders();
  const publish = deps.publisher.publish.bind(deps.publisher);
  const state = { slow: true };
  deps.publisher = {
    // Confirmed only at its deadline on the pass's clock (the steps running at once wait it out together).
    publish: async (m) => {
      if (state.slow) {
        const due = clock.now().getTime() + DEFAULT_PUBLISH_DEADLINE_MS;
        await new Promise((r) => setTimeout(r, 5));
        if (clock.now().getTime() < due) clock.set(new Date(due));
      }
      return publish(m);
    },
  };
  return { deps, clock, published, state, log };
}

describe('a snapshot pass over its budget', () => {
  it('a tick starts no step past it, runs its upkeep, and asks for the workers left at once', async () => {
    const { deps, clock, published, state, log } = await slowPubSub();
    const sweep = vi.spyOn(deps.snapshots, 'sweepParts');
    const retention = vi.spyOn(deps.retired, 'candidates');

    const tick = await handleSnapshotEvent(deps, TICK);

    expect(tick.outcome).toBe('done');
    // A step begun just inside the budget may still take its publish's deadline and its writes.
    expect(clock.now().getTime() - T0.getTime()).toBeLessThanOrEqual(SNAPSHOT_PASS_BUDGET_MS + STEP_WORST_MS);
    const reached = new Set(published.map((m) => m.workerId));
    const left = fleet.filter((w) => !reached.has(w));
    expect(reached.size).toBeGreaterThan(0);
    expect(left.length).toBeGreaterThan(0);
    expect(tick.summary).toMatchObject({ left: left.length, failures: left.length });
    expect(tick.summary!.failed.map((f) => f.workerId).sort()).toEqual(left);
    expect(tick.summary!.failed.every((f) => !f.permanent)).toBe(true);
    expect(sweep).toHaveBeenCalledTimes(1);
    expect(retention).toHaveBeenCalledTimes(1);
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        event: 'gateway.snapshot_pass_over_budget',
        severity: 'WARNING',
        left: left.length,
      }),
    );
    // Not left to the next tick (a minute on, past the workers' 30 s sessions): a pass is asked for now.
    expect(deps.requester.requests).toEqual([{ reason: STEP_RETRY_REASON }]);

    // That request, as Pub/Sub delivers it seconds later, reaches every worker the tick left.
    state.slow = false;
    clock.advance(5_000);
    const before = published.length;
    const retry = await handleSnapshotEvent(deps, event(deps.requester.requests[0]!));
    expect(retry.outcome).toBe('done');
    expect(retry.summary).toMatchObject({ left: 0, failures: 0 });
    const republished = new Set(published.slice(before).map((m) => m.workerId));
    expect(left.filter((w) => !republished.has(w))).toEqual([]);
  }, 120_000);

  it('a request whose pass left workers is redelivered, and its redelivery reaches them', async () => {
    const { deps, clock, published, state } = await slowPubSub();
    const admin = event({ reason: 'admin' });

    // A request naming no worker: every step is its own, so Pub/Sub redelivers it.
    await expect(handleSnapshotEvent(deps, admin)).rejects.toThrow(/worker snapshot step\(s\) failed/);
    const reached = new Set(published.map((m) => m.workerId));
    expect(reached.size).toBeGreaterThan(0);
    expect(reached.size).toBeLessThan(fleet.length);
    expect(deps.requester.requests).toEqual([]);

    state.slow = false;
    clock.advance(5_000);
    const again = await handleSnapshotEvent(deps, admin);
    expect(again.outcome).toBe('done');
    expect(new Set(published.map((m) => m.workerId))).toEqual(new Set(fleet));
  }, 120_000);
});
