// A lease belongs to the proxy instance it was granted on (metadata.uid), not to the name: a proxy deleted
// and created again under the same name is another proxy, and must not inherit the deleted one's leases —
// not their capacity, not their renewals, not a late report's cooldown, not a cooldown reported while the
// deleted one was still there, and not a place in the gateway pool held back until they expire. Leases
// and cooldowns stored before uids were recorded keep counting by name. Against the Firestore emulator,
// through the whole middleware chain; the snapshot pass on the real Firestore adapters.
import { FieldValue, Firestore } from '@google-cloud/firestore';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { SecretReader } from '../../shared/src/ports/secrets.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { leaseTestApp, proxy, writeFleet } from '../support/leases.js';
import { pollUntil } from '../support/poll.js';
import { firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKEN = 'crawler-token-0123456789';
const secrets: SecretReader = { access: async () => 'u:p' };
/** The uid of the proxy created again under the deleted one's name (proxy() gives the first its own). */
const NEW_UID = '11111111-1111-4111-8111-111111111111';

let clock: ManualClock;
let apis: LeaseApiRuntime[] = [];

beforeEach(async () => {
  await clearProject(projectId);
  clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
});
afterEach(async () => {
  await Promise.all(apis.map((a) => a.stop()));
  apis = [];
});
afterAll(() => db.terminate());

/** An API replica on the emulator (a new one loads every lease state afresh). */
function replica() {
  const { app, leases } = leaseTestApp({
    firestore: new Firestore({ projectId }),
    clock,
    secrets,
    lease: { tokens: [{ name: 'c1', token: TOKEN }], cooldownWindowMs: 120_000 },
  });
  apis.push(leases);
  return async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
}
type Call = ReturnType<typeof replica>;

const first = () => proxy('us-1', { attributes: { region: 'us' }, capacity: 1, external: true });

/**
 * Deletes us-1's document and creates another us-1 (new uid, another endpoint), as an admin would; in the
 * gateway pool when `gatewayPool`.
 */
async function recreate(call: Call, gatewayPool = false): Promise<void> {
  await db.collection('proxies').doc('us-1').delete();
  const p = first();
  const again: ProxyResource = {
    ...p,
    uid: NEW_UID,
    spec: {
      ...p.spec,
      endpoint: { host: 'other.example', port: 9090, protocol: 'http' },
      gatewayPool,
    } as ProxyResource['spec'],
  };
  await writeFleet(db, [again]);
  await pollUntil(
    () => call('GET', '/v1/proxies'),
    (l) => l.body?.proxies?.[0]?.uid === NEW_UID,
    10_000,
    'the API listing the new us-1',
  );
}

describe('a proxy deleted and created again under the same name', () => {
  it('does not inherit the deleted one’s leases: capacity, renewal and late reports', async () => {
    await writeFleet(db, [first()]);
    const call = replica();
    const old = await call('POST', '/v1/leases', { selector: { region: 'us' }, target: 'shop.example' });
    expect(old.status).toBe(201);
    expect(old.body.proxy.host).toBe('proxy.example');

    await recreate(call);
    // The new proxy is listed empty, and the old lease cannot be renewed onto it: it is answered as the
    // renewal of a lease whose proxy was deleted.
    const listed = await call('GET', '/v1/proxies');
    expect(
      listed.body.proxies.map((p: { uid: string; activeLeases: number }) => [p.uid, p.activeLeases]),
    ).toEqual([[NEW_UID, 0]]);
    const renew = await call('POST', `/v1/leases/${old.body.leaseId}/renew`, { ttlSeconds: 600 });
    expect(renew).toMatchObject({ status: 409, body: { error: 'proxy_withdrawn' } });

    // Its one slot is free for a lease on the new proxy, which then takes it.
    const fresh = await call('POST', '/v1/leases', { selector: { region: 'us' } });
    expect(fresh.status).toBe(201);
    expect(fresh.body.proxy).toMatchObject({ name: 'us-1', host: 'other.example', port: 9090 });
    expect((await call('GET', '/v1/proxies')).body.proxies[0].activeLeases).toBe(1);

    // Releasing the old lease ends it and leaves the new proxy's lease where it was.
    expect((await call('DELETE', `/v1/leases/${old.body.leaseId}`)).status).toBe(204);
    const full = await call('POST', '/v1/leases', { selector: { region: 'us' } });
    expect(full).toMatchObject({ status: 409, body: { error: 'no_match', atCapacity: 1 } });

    // A late report on the old lease is accepted (it still resolves) but cools nothing down.
    const report = await call('POST', `/v1/leases/${old.body.leaseId}/report`, { result: 'rate_limited' });
    expect(report.status).toBe(204);
    expect((await db.collection(LEASE_COLLECTIONS.cooldowns).get()).size).toBe(0);
    expect((await call('DELETE', `/v1/leases/${fresh.body.leaseId}`)).status).toBe(204);
    const after = await call('POST', '/v1/leases', { selector: { region: 'us' }, target: 'shop.example' });
    expect(after.status).toBe(201);

    // The stored lease and lease-state entry say which instance they were granted on.
    const stored = (await db.collection(LEASE_COLLECTIONS.leases).doc(after.body.leaseId).get()).data();
    expect(stored?.proxyUid).toBe(NEW_UID);
    const state = (await db.collection(LEASE_COLLECTIONS.leaseState).doc('us-1').get()).data();
    expect(state?.entries.find((e: { leaseId: string }) => e.leaseId === after.body.leaseId)?.proxyUid).toBe(
      NEW_UID,
    );
  });

  it('a report on a lease whose proxy is still there cools it down as before', async () => {
    await writeFleet(db, [first()]);
    const call = replica();
    const lease = await call('POST', '/v1/leases', { selector: { region: 'us' }, target: 'shop.example' });
    expect((await call('POST', `/v1/leases/${lease.body.leaseId}/report`, { result: 'banned' })).status).toBe(
      204,
    );
    const cooldowns = await db.collection(LEASE_COLLECTIONS.cooldowns).get();
    expect(cooldowns.docs.map((d) => [d.data().proxy, d.data().target])).toEqual([['us-1', 'shop.example']]);
  });

  it('leases stored before uids were recorded still count by name (compatibility)', async () => {
    await writeFleet(db, [first()]);
    const old = await replica()('POST', '/v1/leases', { selector: { region: 'us' } });
    expect(old.status).toBe(201);
    // What an older release of the service stored: no proxyUid on the lease nor on its entry (and no
    // endpoint, recorded later still).
    const leaseRef = db.collection(LEASE_COLLECTIONS.leases).doc(old.body.leaseId);
    await leaseRef.update({ proxyUid: FieldValue.delete(), endpoint: FieldValue.delete() });
    const stateRef = db.collection(LEASE_COLLECTIONS.leaseState).doc('us-1');
    const entries = (await stateRef.get()).data()?.entries as Array<Record<string, unknown>>;
    await stateRef.update({ entries: entries.map(({ proxyUid: _, ...e }) => e) });

    const call = replica();
    await recreate(call);
    expect((await call('GET', '/v1/proxies')).body.proxies[0].activeLeases).toBe(1);
    expect((await call('POST', `/v1/leases/${old.body.leaseId}/renew`, { ttlSeconds: 600 })).status).toBe(
      200,
    );
    const full = await call('POST', '/v1/leases', { selector: { region: 'us' } });
    expect(full).toMatchObject({ status: 409, body: { error: 'no_match', atCapacity: 1 } });
  });
});

describe('a cooldown reported before the proxy was deleted and created again', () => {
  /** Leases the first us-1 for shop.example and reports it banned there: a cooldown of that instance. */
  async function bannedOnFirst(call: Call): Promise<void> {
    const lease = await call('POST', '/v1/leases', { selector: { region: 'us' }, target: 'shop.example' });
    expect(lease.status).toBe(201);
    expect((await call('POST', `/v1/leases/${lease.body.leaseId}/report`, { result: 'banned' })).status).toBe(
      204,
    );
    expect((await call('DELETE', `/v1/leases/${lease.body.leaseId}`)).status).toBe(204);
    const stored = (await db.collection(LEASE_COLLECTIONS.cooldowns).get()).docs.map((d) => d.data());
    expect(stored.map((c) => [c.proxy, c.target])).toEqual([['us-1', 'shop.example']]);
    const cooled = await call('POST', '/v1/leases', { selector: { region: 'us' }, target: 'shop.example' });
    expect(cooled).toMatchObject({ status: 409, body: { error: 'no_match', inCooldown: 1 } });
  }

  it('does not cool down the new proxy: the site pushed back on the deleted one', async () => {
    await writeFleet(db, [first()]);
    const call = replica();
    await bannedOnFirst(call);

    await recreate(call);
    const fresh = await call('POST', '/v1/leases', { selector: { region: 'us' }, target: 'shop.example' });
    expect(fresh.status).toBe(201);
    expect(fresh.body.proxy).toMatchObject({ name: 'us-1', host: 'other.example' });
    // A replica started afterwards, which loads the cooldowns from the store, agrees.
    expect((await call('DELETE', `/v1/leases/${fresh.body.leaseId}`)).status).toBe(204);
    const later = await replica()('POST', '/v1/leases', {
      selector: { region: 'us' },
      target: 'shop.example',
    });
    expect(later.status).toBe(201);
    // The cooldown says which instance it was reported on.
    const [cooldown] = (await db.collection(LEASE_COLLECTIONS.cooldowns).get()).docs;
    expect(cooldown?.get('proxyUid')).toBe(first().uid);
  });

  it('a cooldown stored without a uid still cools down whatever proxy has the name (compatibility)', async () => {
    await writeFleet(db, [first()]);
    await bannedOnFirst(replica());
    // What an older release of the service stored: no proxyUid on the cooldown.
    const [doc] = (await db.collection(LEASE_COLLECTIONS.cooldowns).get()).docs;
    await doc?.ref.update({ proxyUid: FieldValue.delete() });

    const call = replica();
    await recreate(call);
    const cooled = await call('POST', '/v1/leases', { selector: { region: 'us' }, target: 'shop.example' });
    expect(cooled).toMatchObject({ status: 409, body: { error: 'no_match', inCooldown: 1 } });
  });
});

describe('a pool proxy created again under the name of a leased one', () => {
  const ownership = new FirestoreOwnershipStore(db);

  /** A live gateway worker, gw-1, for the passes to plan onto. */
  const liveWorker = () =>
    new FirestoreWorkerStore(db).put(record('gw-1', new Date(clock.now().getTime() + 60_000)), null);

  /** One snapshot pass; the owner it leaves us-1 with (null: none). */
  async function planned(): Promise<string | null> {
    const published: GatewaySnapshotMessage[] = [];
    const summary = await runSnapshotPass(firestorePassDeps(db, clock, published, 'pass'));
    expect(summary).toMatchObject({ ran: true, failures: 0 });
    return (await ownership.read()).records.get('us-1')?.owner ?? null;
  }

  it('is handed to a gateway worker at once: the deleted one’s leases do not hold it back', async () => {
    await writeFleet(db, [first()]);
    const call = replica();
    const old = await call('POST', '/v1/leases', { selector: { region: 'us' }, ttlSeconds: 3600 });
    expect(old.status).toBe(201);

    await recreate(call, true);
    // The old lease is still active, for an hour, but it is the deleted proxy's and cannot be renewed.
    const state = (await db.collection(LEASE_COLLECTIONS.leaseState).doc('us-1').get()).data();
    expect(state?.entries.map((e: { proxyUid: string }) => e.proxyUid)).toEqual([first().uid]);
    await liveWorker();
    expect(await planned()).toBe('gw-1');
  });

  it('leases stored before uids were recorded still hold it back (compatibility)', async () => {
    await writeFleet(db, [first()]);
    const old = await replica()('POST', '/v1/leases', { selector: { region: 'us' }, ttlSeconds: 3600 });
    expect(old.status).toBe(201);
    const stateRef = db.collection(LEASE_COLLECTIONS.leaseState).doc('us-1');
    const entries = (await stateRef.get()).data()?.entries as Array<Record<string, unknown>>;
    await stateRef.update({ entries: entries.map(({ proxyUid: _, ...e }) => e) });

    await recreate(replica(), true);
    await liveWorker();
    expect(await planned()).toBeNull();
    // Once that lease has ended, the proxy is the pool's.
    expect((await replica()('DELETE', `/v1/leases/${old.body.leaseId}`)).status).toBe(204);
    expect(await planned()).toBe('gw-1');
  });
});
