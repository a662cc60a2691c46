// A lease belongs to the proxy instance it was granted on (metadata.uid), not to the name: a proxy deleted
// and created again under the same name is another proxy, and must not inherit the deleted one's leases —
// not their capacity, not their renewals, not a late report's cooldown. Leases stored before uids were
// recorded keep counting by name. Against the Firestore emulator, through the whole middleware chain.
import { FieldValue, Firestore } from '@google-cloud/firestore';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { SecretReader } from '../../shared/src/ports/secrets.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { leaseTestApp, proxy, writeFleet } from '../support/leases.js';
import { pollUntil } from '../support/poll.js';

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

/** Deletes us-1's document and creates another us-1 (new uid, another endpoint), as an admin would. */
async function recreate(call: Call): Promise<void> {
  await db.collection('proxies').doc('us-1').delete();
  const p = first();
  const again: ProxyResource = {
    ...p,
    uid: NEW_UID,
    spec: {
      ...p.spec,
      endpoint: { host: 'other.example', port: 9090, protocol: 'http' },
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
    // What an older release of the service stored: no proxyUid on the lease nor on its entry.
    const leaseRef = db.collection(LEASE_COLLECTIONS.leases).doc(old.body.leaseId);
    await leaseRef.update({ proxyUid: FieldValue.delete() });
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
