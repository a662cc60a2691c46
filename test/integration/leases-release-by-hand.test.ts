// Releasing a lease whose leases/{id} document an operator deleted or edited in the console: the entry in
// leaseState/{proxy} is what holds the slot, and a release ends it — instead of a 503 for ever on the
// replica holding it, or a 204 that left the slot taken until the entry expired (renew and report answer
// 404 for such a lease, so nobody else could end it).
import { Firestore } from '@google-cloud/firestore';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { FirestoreLeaseStore } from '../../shared/src/adapters/firestore/lease-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { NewLease } from '../../shared/src/ports/lease-store.js';
import { clearProject, releaseProject, testProjectId } from '../support/emulators.js';
import { storeClocks } from '../support/lease-store-clocks.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const settings = { cooldownWindowMs: 60_000 };
let clock: ManualClock;
let stores: FirestoreLeaseStore[] = [];
let seq = 0;

async function replica(): Promise<FirestoreLeaseStore> {
  const s = new FirestoreLeaseStore(new Firestore({ projectId }), {
    ...storeClocks(clock),
    settings,
    log: memoryLogger(),
  });
  stores.push(s.start());
  await s.ready(10_000);
  return s;
}
const newLease = (): NewLease => ({
  id: `lease-${++seq}`,
  target: null,
  exclusive: false,
  holder: 'test',
  ttlSeconds: 3600,
});
const p1 = [{ name: 'p1', uid: '00000000-0000-4000-8000-000000000000', capacity: 1 }];

async function grantOn(s: FirestoreLeaseStore): Promise<string> {
  const g = await s.grant({ candidates: p1, lease: newLease() });
  if (g.kind !== 'granted') throw new Error(`not granted: ${g.kind}`);
  return g.lease.id;
}

/** The lease ids leaseState/p1 holds. */
async function entriesOfP1(): Promise<string[]> {
  const snap = await db.collection(LEASE_COLLECTIONS.leaseState).doc('p1').get();
  const entries = (snap.data()?.entries ?? []) as Array<{ leaseId: string }>;
  return entries.map((e) => e.leaseId);
}

const leaseDoc = (id: string) => db.collection(LEASE_COLLECTIONS.leases).doc(id);

beforeEach(async () => {
  await clearProject(projectId);
  clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
});
afterEach(async () => {
  await Promise.all(stores.map((s) => s.stop()));
  stores = [];
});
afterAll(async () => {
  await db.terminate();
  await releaseProject(projectId);
});

describe('releasing a lease whose document was deleted or edited by hand', () => {
  it('deleted: the replica holding its entry ends it (true, the API’s 204), not 503 contended', async () => {
    const a = await replica();
    const id = await grantOn(a);
    await leaseDoc(id).delete();
    await expect(a.release(id)).resolves.toBe(true);
    expect(await entriesOfP1()).toEqual([]);
    // The slot is free again: capacity 1 takes a new lease.
    await grantOn(a);
  });

  it('deleted: a replica that loaded its entry at start ends it too', async () => {
    const a = await replica();
    const id = await grantOn(a);
    await leaseDoc(id).delete();
    const b = await replica();
    await expect(b.release(id)).resolves.toBe(true);
    expect(await entriesOfP1()).toEqual([]);
    expect((await leaseDoc(id).get()).exists).toBe(false);
  });

  it('edited into a document that does not decode: a replica that does not hold it ends the entry it names', async () => {
    const b = await replica();
    const a = await replica();
    const id = await grantOn(a);
    await leaseDoc(id).set({ proxy: 'p1', note: 'edited in the console' });
    await expect(b.release(id)).resolves.toBe(true);
    expect(await entriesOfP1()).toEqual([]);
    // Marked ended, so that its TTL removes it after CooldownWindow.
    expect((await leaseDoc(id).get()).data()).toMatchObject({ releasedAt: expect.anything() });
  });
});
