// After an epoch bump every live worker has a snapshot to store and publish. The pass runs those steps
// several at a time (pass.ts ACT_CONCURRENCY), not one after another: one at a time, a hundred workers
// waited out a hundred steps' round trips before the last heard of the change. Real Firestore adapters on
// the emulator; the publisher holds each publish until every worker's is in flight (or WINDOW_MS pass).
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId('demo-actparallel');
const db = new Firestore({ projectId });
afterAll(() => db.terminate());

const T0 = new Date('2026-11-30T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
/**
 * How long a publish waits for the others to be in flight too. Its size is not what the test asserts, only
 * room for three workers' store steps on a loaded emulator (5 s was tight). One at a time, each publish
 * waits it out alone: the test's 90 s timeout leaves room for all three waits, so that fails as `most` 1.
 */
const WINDOW_MS = 20_000;

beforeEach(async () => {
  await clearProject(projectId);
});

describe('the act step of a snapshot pass', () => {
  it('stores and publishes the workers’ snapshots at once, each one whole', async () => {
    const proxies = new FirestoreProxyStore(db);
    const workers = new FirestoreWorkerStore(db);
    const fleet = ['gw-a', 'gw-b', 'gw-c'];
    await Promise.all(Array.from({ length: 6 }, (_, i) => proxies.create(poolProxy(`pp-${i}`, i + 1))));
    await Promise.all(fleet.map((w) => workers.put(record(w, at(300)), null)));

    const published: GatewaySnapshotMessage[] = [];
    const deps = firestorePassDeps(db, new ManualClock(T0), published, 'pass-1');
    const publish = deps.publisher.publish.bind(deps.publisher);
    let inFlight = 0;
    let most = 0;
    let allIn!: () => void;
    const everyoneIn = new Promise<void>((r) => {
      allIn = r;
    });
    deps.publisher = {
      publish: async (m) => {
        inFlight++;
        most = Math.max(most, inFlight);
        if (inFlight === fleet.length) allIn();
        // Bounded: one at a time, each publish waits the window out alone and `most` stays 1.
        await Promise.race([everyoneIn, new Promise((r) => setTimeout(r, WINDOW_MS))]);
        inFlight--;
        return publish(m);
      },
    };

    const summary = await runSnapshotPass(deps);

    expect(most).toBe(fleet.length);
    expect(summary).toMatchObject({ ran: true, failures: 0, published: fleet.length });
    // Each worker got its own first snapshot, its pool share inside, and the results keep the steps' order.
    expect(published.map((m) => m.workerId).sort()).toEqual(fleet);
    expect(summary.workers.map((w) => w.workerId)).toEqual(
      [...summary.workers.map((w) => w.workerId)].sort(),
    );
    const owned = published.flatMap((m) => (m.kind === 'full' ? m.proxies.map((p) => p.name) : []));
    expect(owned.sort()).toEqual(Array.from({ length: 6 }, (_, i) => `pp-${i}`).sort());
  }, 90_000);
});
