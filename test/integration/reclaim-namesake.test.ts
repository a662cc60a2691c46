// A reclaim is of the proxy it was asked for, not of its name: reclaimed, deleted and created again under
// the name within the reclaim's TTL (up to a week), the new proxy used to start out of the gateway pool —
// left out by the snapshot planner and leasable as a reclaimed one. On the Firestore emulator with the
// deployed stores: the lease service's ownership view and the planner's observe.
import { randomUUID } from 'node:crypto';
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { observe } from '../../functions/snapshot/src/observe.js';
import { FirestoreOwnershipGate } from '../../shared/src/adapters/firestore/ownership-gate.js';
import { FirestoreReclaimStore } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const reclaims = new FirestoreReclaimStore(db);
const proxies = new FirestoreProxyStore(db);
const T0 = new Date();
const clock = new ManualClock(T0);
const until = new Date(T0.getTime() + 600_000);
const reclaim = (proxy: string, uid: string | null) =>
  reclaims.put({ proxy, uid, requestedAt: T0, requestedBy: 'admin', until });

afterAll(() => db.terminate());
beforeEach(async () => {
  await clearProject(projectId);
});

describe('a reclaim and a namesake of its proxy', () => {
  // Random uids, as the API makes them (poolProxy's share their first 20 hex digits: one instance name).
  const asked = { ...poolProxy('rn-a', 1), uid: randomUUID() };
  const namesake = { ...poolProxy('rn-a', 2), uid: randomUUID() };

  it('the lease service’s view: the proxy asked for is reclaimed, a namesake is not', async () => {
    await reclaim('rn-a', asked.uid);
    // A reclaim stored before uids were recorded reclaims whatever proxy has the name, as it did.
    await db.collection('reclaims').doc('rn-old').set({
      proxy: 'rn-old',
      requestedAt: T0,
      requestedBy: 'admin',
      until,
      expireAt: until,
    });
    // One that does not fit (edited by hand: no requestedBy) is no reclaim, for the planner as for the gate.
    await db
      .collection('reclaims')
      .doc('rn-bad')
      .set({ proxy: 'rn-bad', requestedAt: T0, until, expireAt: until });
    expect((await reclaims.list(T0)).map((r) => r.proxy)).not.toContain('rn-bad');
    const gate = new FirestoreOwnershipGate(db, clock, { log: memoryLogger() }).start();
    try {
      await gate.ready(10_000);
      expect(gate.leasable(asked)).toBe(true);
      expect(gate.leasable(namesake)).toBe(false);
      expect(gate.leasable({ ...poolProxy('rn-old', 3), name: 'rn-old' })).toBe(true);
      expect(gate.leasable({ ...poolProxy('rn-bad', 5), name: 'rn-bad' })).toBe(false);
    } finally {
      gate.stop();
    }
  });

  it('the planner’s view: the namesake stays in the gateway pool', async () => {
    await reclaim('rn-a', asked.uid);
    await reclaim('rn-b', null);
    await proxies.create(namesake);
    await proxies.create({ ...poolProxy('rn-b', 4), name: 'rn-b' });
    const { input } = await observe(firestorePassDeps(db, clock, []), T0);
    expect([...input.reclaimed]).toEqual(['rn-b']);

    // The proxy the reclaim was asked for is reclaimed.
    await db.collection('proxies').doc('rn-a').delete();
    await proxies.create(asked);
    const again = await observe(firestorePassDeps(db, clock, []), T0);
    expect([...again.input.reclaimed].sort()).toEqual(['rn-a', 'rn-b']);
  });
});
