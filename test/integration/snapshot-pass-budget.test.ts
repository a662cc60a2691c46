// A tick's pass under a slow Pub/Sub: a hundred live workers each due a snapshot, every publish pending its
// whole deadline (10 s) and then answered unconfirmed. With no budget the pass ran 100 / 8 × 10 s ≈ 130 s,
// past the function's 120 s timeout: upkeep skipped and the tick redelivered. Past SNAPSHOT_PASS_BUDGET_MS
// it starts no step; the tick is acknowledged with its upkeep run, and the next pass publishes the workers
// left. Real Firestore adapters on the emulator; the publisher moves the pass's ManualClock 10 s per publish.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { handleSnapshotEvent } from '../../functions/snapshot/src/handler.js';
import { SNAPSHOT_PASS_BUDGET_MS } from '../../functions/snapshot/src/pass.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { DEFAULT_PUBLISH_DEADLINE_MS } from '../../shared/src/adapters/pubsub/publisher.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { PublishError } from '../../shared/src/ports/publish-error.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { countingHolders, firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId('demo-passbudget');
const db = new Firestore({ projectId });
afterAll(() => db.terminate());

const T0 = new Date('2026-12-06T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const TICK = {
  data: {
    message: {
      data: Buffer.from(JSON.stringify({ job: 'snapshot-tick' })).toString('base64'),
      messageId: '1',
    },
  },
};
const fleet = Array.from({ length: 100 }, (_, i) => `gw-${String(i).padStart(3, '0')}`);

beforeEach(async () => {
  await clearProject(projectId);
});

describe('a snapshot pass over its budget', () => {
  it('starts no step past it, runs the upkeep and is acknowledged; the next pass publishes the workers left', async () => {
    const proxies = new FirestoreProxyStore(db);
    const workers = new FirestoreWorkerStore(db);
    await Promise.all(Array.from({ length: 8 }, (_, i) => proxies.create(poolProxy(`pp-${i}`, i + 1))));
    await Promise.all(fleet.map((w) => workers.put(record(w, at(900)), null)));

    const clock = new ManualClock(T0);
    const published: GatewaySnapshotMessage[] = [];
    const deps = firestorePassDeps(db, clock, published);
    deps.newHolder = countingHolders();
    const publish = deps.publisher.publish.bind(deps.publisher);
    const tried: string[] = [];
    deps.publisher = {
      // Pending its deadline on the pass's clock (the steps running at once wait it out together), then
      // answered unconfirmed.
      publish: async (m) => {
        tried.push(m.workerId);
        const due = clock.now().getTime() + DEFAULT_PUBLISH_DEADLINE_MS;
        await new Promise((r) => setTimeout(r, 5));
        if (clock.now().getTime() < due) clock.set(new Date(due));
        throw new PublishError('unconfirmed', 'no confirmation within the deadline');
      },
    };
    const sweep = vi.spyOn(deps.snapshots, 'sweepParts');
    const retention = vi.spyOn(deps.retired, 'candidates');

    const first = await handleSnapshotEvent(deps, TICK);

    expect(first.outcome).toBe('done');
    expect(clock.now().getTime() - T0.getTime()).toBeLessThanOrEqual(
      SNAPSHOT_PASS_BUDGET_MS + DEFAULT_PUBLISH_DEADLINE_MS,
    );
    const left = first.summary!.left!;
    expect(left).toBeGreaterThan(0);
    expect(tried.length + left).toBe(fleet.length);
    expect(sweep).toHaveBeenCalledTimes(1);
    expect(retention).toHaveBeenCalledTimes(1);
    const lines = (deps.log as unknown as { lines: Array<Record<string, unknown>> }).lines;
    expect(lines.some((l) => l.event === 'gateway.snapshot_pass' && l.left === left)).toBe(true);

    deps.publisher = { publish };
    clock.advance(60_000);
    const next = await handleSnapshotEvent(deps, TICK);
    expect(next.outcome).toBe('done');
    expect(next.summary!.left).toBe(0);
    const reached = new Set(published.map((m) => m.workerId));
    expect(fleet.filter((w) => !tried.includes(w)).every((w) => reached.has(w))).toBe(true);
  }, 120_000);
});
