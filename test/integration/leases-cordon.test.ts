// Cordon (spec.cordoned, docs/leases.md § Cordon): an operator stops a proxy being handed out without
// deleting it. Set through the admin API's PATCH …/spec as an operator would, then seen by the lease API and
// the snapshot pass: no new lease on it, its leases not renewed (409 proxy_cordoned) while their reports
// and releases still land, `leasable: false` in discovery, out of the gateway workers' snapshots — and all of
// it undone by uncordoning. Against the Firestore emulator, through the whole middleware chain; the snapshot
// pass on the real Firestore adapters.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import type { KeyedLock } from '../../shared/src/adapters/firestore/lease-keyed-lock.js';
import { FirestoreLeaseStore } from '../../shared/src/adapters/firestore/lease-store.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import type { LeaseSettings } from '../../shared/src/domain/leases/model.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { SecretReader } from '../../shared/src/ports/secrets.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { storeClocks } from '../support/lease-store-clocks.js';
import { ADMIN_TOKEN, leaseTestApp, proxy, writeFleet } from '../support/leases.js';
import { pollUntil } from '../support/poll.js';
import { firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKEN = 'crawler-token-0123456789';
const secrets: SecretReader = { access: async () => 'u:p' };

let clock: ManualClock;
let api: LeaseApiRuntime | undefined;

beforeEach(async () => {
  await clearProject(projectId);
  clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
});
afterEach(async () => {
  await api?.stop();
  api = undefined;
});
afterAll(() => db.terminate());

/** The API (admin and lease routes) on the emulator; calls as the crawler unless told `admin`. */
function startApi() {
  const built = leaseTestApp({
    firestore: new Firestore({ projectId }),
    clock,
    secrets,
    lease: { tokens: [{ name: 'c1', token: TOKEN }], cooldownWindowMs: 120_000 },
  });
  api = built.leases;
  return async (
    method: string,
    path: string,
    body?: unknown,
    as: 'crawler' | 'admin' = 'crawler',
    headers: Record<string, string> = {},
  ) => {
    const res = await built.app.request(path, {
      method,
      headers: {
        authorization: `Bearer ${as === 'admin' ? ADMIN_TOKEN : TOKEN}`,
        'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
}

type Call = ReturnType<typeof startApi>;

/**
 * A renewal (ttl 600 s) of `leaseId` queued behind another write holding c-1's lock (a hot proxy's queue);
 * `release` lets that write go and waits for it.
 */
async function renewalQueuedOnC1(call: Call, leaseId: string) {
  const store = api!.store;
  const lock = Reflect.get(store, 'lock') as KeyedLock;
  let unlock: () => void = () => {};
  const holding = lock.run('c-1', () => new Promise<void>((resolve) => (unlock = resolve)));
  const renewing = call('POST', `/v1/leases/${leaseId}/renew`, { ttlSeconds: 600 });
  await pollUntil(
    () => store.pending('c-1'),
    (n) => n === 1,
    10_000,
    'the renewal queued on c-1',
  );
  return {
    renewing,
    release: async () => {
      unlock();
      await holding;
    },
  };
}

/** PATCHes spec.cordoned as an operator would, and waits until the lease API's catalog has seen it. */
async function setCordon(call: Call, name: string, cordoned: boolean): Promise<void> {
  const patched = await call('PATCH', `/v1/proxies/${name}/spec`, { cordoned }, 'admin');
  expect(patched).toMatchObject({ status: 200, body: { spec: { cordoned } } });
  await pollUntil(
    async () => {
      await api?.catalog.ready(10_000); // it listens only once requests come (proxy-cache.ts)
      return api?.catalog.get(name);
    },
    (p) => p?.spec.cordoned === cordoned,
    10_000,
    `the lease API sees ${name} ${cordoned ? 'cordoned' : 'uncordoned'}`,
  );
}

describe('a cordoned proxy (leases)', () => {
  it('gets no new lease and no renewal; reports and release still land; uncordoned it is leased again', async () => {
    await writeFleet(db, [proxy('c-1', { attributes: { site: 'shop' }, capacity: 4, external: true })]);
    const call = startApi();
    const held = await call('POST', '/v1/leases', { selector: { site: 'shop' }, target: 'shop.example' });
    expect(held).toMatchObject({ status: 201, body: { proxy: { name: 'c-1' } } });

    await setCordon(call, 'c-1', true);

    // Listed with its cordon and its true health, but not leasable: `leasable=true` leaves it out.
    const listed = await call('GET', '/v1/proxies');
    expect(listed.body.proxies).toEqual([
      expect.objectContaining({ name: 'c-1', spec: expect.objectContaining({ cordoned: true }) }),
    ]);
    expect(listed.body.proxies[0]).toMatchObject({ healthy: true, leasable: false, activeLeases: 1 });
    expect((await call('GET', '/v1/proxies?leasable=true')).body).toMatchObject({ count: 0, proxies: [] });

    // No new lease, though it has room: the 409 says why.
    const refused = await call('POST', '/v1/leases', { selector: { site: 'shop' } });
    expect(refused).toMatchObject({
      status: 409,
      body: { error: 'no_match', considered: 1, cordoned: 1, unhealthy: 0, atCapacity: 0, inGateway: 0 },
    });

    // The lease it holds is not renewed — neither extended nor ended: it runs to its expiry.
    const ref = db.collection(LEASE_COLLECTIONS.leases).doc(held.body.leaseId);
    const before = (await ref.get()).data();
    const renew = await call('POST', `/v1/leases/${held.body.leaseId}/renew`, { ttlSeconds: 600 });
    expect(renew).toMatchObject({ status: 409, body: { error: 'proxy_cordoned' } });
    expect(renew.body.message).toMatch(/acquire a new one/);
    const after = (await ref.get()).data();
    expect(after?.expiresAt).toEqual(before?.expiresAt);
    expect(after?.renewals).toBe(before?.renewals);
    expect(after?.releasedAt ?? null).toBeNull();

    // A report still lands and records its cooldown; the release still ends the lease.
    const report = await call('POST', `/v1/leases/${held.body.leaseId}/report`, { result: 'rate_limited' });
    expect(report.status).toBe(204);
    const cooldowns = (await db.collection(LEASE_COLLECTIONS.cooldowns).get()).docs.map((d) => d.data());
    expect(cooldowns.map((c) => [c.proxy, c.target])).toEqual([['c-1', 'shop.example']]);
    expect((await call('DELETE', `/v1/leases/${held.body.leaseId}`)).status).toBe(204);
    expect((await ref.get()).get('releasedAt')).not.toBeNull();

    // Uncordoned, it is leasable again (for a target it is not cooling down for).
    await setCordon(call, 'c-1', false);
    expect((await call('GET', '/v1/proxies?leasable=true')).body.count).toBe(1);
    const again = await call('POST', '/v1/leases', { selector: { site: 'shop' }, target: 'other.example' });
    expect(again).toMatchObject({ status: 201, body: { proxy: { name: 'c-1' } } });
    expect((await call('POST', `/v1/leases/${again.body.leaseId}/renew`, {})).status).toBe(200);
  });

  it('an acquire retried with its Idempotency-Key after the cordon answers the same lease, which runs on', async () => {
    await writeFleet(db, [proxy('c-1', { attributes: { site: 'shop' }, capacity: 4, external: true })]);
    const call = startApi();
    const key = { 'idempotency-key': 'acquire-7f3a' };
    const first = await call('POST', '/v1/leases', { selector: { site: 'shop' } }, 'crawler', key);
    expect(first).toMatchObject({ status: 201, body: { proxy: { name: 'c-1' } } });

    await setCordon(call, 'c-1', true);

    const retried = await call('POST', '/v1/leases', { selector: { site: 'shop' } }, 'crawler', key);
    expect(retried).toMatchObject({
      status: 201,
      body: { leaseId: first.body.leaseId, proxy: { name: 'c-1' } },
    });
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    const ref = db.collection(LEASE_COLLECTIONS.leases).doc(first.body.leaseId);
    expect((await ref.get()).get('releasedAt') ?? null).toBeNull(); // not given back: it runs to its expiry
    // …and the cordon still holds for anything new
    const fresh = await call('POST', '/v1/leases', { selector: { site: 'shop' } }, 'crawler', {
      'idempotency-key': 'acquire-9c1d',
    });
    expect(fresh).toMatchObject({ status: 409, body: { error: 'no_match', cordoned: 1 } });
  });

  it('a renewal queued behind other writes to its proxy while the cordon lands is refused, not renewed', async () => {
    await writeFleet(db, [proxy('c-1', { attributes: { site: 'shop' }, capacity: 4, external: true })]);
    const call = startApi();
    const held = await call('POST', '/v1/leases', { selector: { site: 'shop' } });
    expect(held).toMatchObject({ status: 201, body: { proxy: { name: 'c-1' } } });
    const ref = db.collection(LEASE_COLLECTIONS.leases).doc(held.body.leaseId);
    const before = (await ref.get()).data();

    // Another write holds the proxy's lock (a hot proxy's queue: up to 30 s); the renewal, checked while
    // the proxy was not cordoned yet, waits for its turn behind it.
    const { renewing, release } = await renewalQueuedOnC1(call, held.body.leaseId);

    await setCordon(call, 'c-1', true);
    await release();
    // Its turn came after the cordon was seen: refused as any renewal after it, the lease left as it was.
    expect(await renewing).toMatchObject({ status: 409, body: { error: 'proxy_cordoned' } });
    const after = (await ref.get()).data();
    expect(after?.expiresAt).toEqual(before?.expiresAt);
    expect(after?.renewals).toBe(before?.renewals);
  });

  it('a queued renewal whose lease another renewal extended meanwhile is refused as cordoned, not as expired', async () => {
    await writeFleet(db, [proxy('c-1', { attributes: { site: 'shop' }, capacity: 4, external: true })]);
    const call = startApi();
    const held = await call('POST', '/v1/leases', { selector: { site: 'shop' }, ttlSeconds: 60 });
    expect(held).toMatchObject({ status: 201, body: { proxy: { name: 'c-1' } } });
    const store = api!.store;
    // A resent renewal: this one queues behind the held lock, having read the lease as granted (60 s)…
    const { renewing, release } = await renewalQueuedOnC1(call, held.body.leaseId);
    // …while its twin, on another replica, extends the lease to 600 s.
    const other = new FirestoreLeaseStore(new Firestore({ projectId }), {
      ...storeClocks(clock),
      settings: Reflect.get(store, 'settings') as LeaseSettings,
      log: { info: () => {}, warn: () => {}, error: () => {} } as never,
    }).start();
    try {
      expect(await other.renew(held.body.leaseId, 600)).toMatchObject({ kind: 'renewed' });
    } finally {
      await other.stop();
    }
    await setCordon(call, 'c-1', true);
    clock.advance(90_000); // past the expiry the queued renewal read, well before the one it has now
    await release();
    expect(await renewing).toMatchObject({ status: 409, body: { error: 'proxy_cordoned' } });
  });

  it('a managed proxy is cordoned by the same merge patch, an edit of its spec alone: its status stays as it was', async () => {
    await writeFleet(db, [proxy('m-1', { capacity: 2 })]);
    const call = startApi();
    const before = (await call('GET', '/v1/proxies/m-1', undefined, 'admin')).body;
    await setCordon(call, 'm-1', true);
    const after = (await call('GET', '/v1/proxies/m-1', undefined, 'admin')).body;
    expect(after.spec).toEqual({ ...before.spec, cordoned: true });
    expect(after.status).toEqual(before.status);
    expect(after.generation).toBe(before.generation + 1);
  });
});

describe('a cordoned gateway-pool proxy', () => {
  const ownership = new FirestoreOwnershipStore(db);
  const snapshots = new FirestoreSnapshotStore(db);

  /** One snapshot pass; the proxies gw-1's latest snapshot holds. */
  async function gw1Snapshot(): Promise<string[]> {
    const published: GatewaySnapshotMessage[] = [];
    const summary = await runSnapshotPass(firestorePassDeps(db, clock, published, 'pass'));
    expect(summary).toMatchObject({ ran: true, failures: 0 });
    return ((await snapshots.loadFull('gw-1'))?.proxies ?? []).map((p) => p.name);
  }

  it('leaves the next snapshot, stays owned (nothing moves), is not leased out of the pool either; uncordoned it is back', async () => {
    const proxies = new FirestoreProxyStore(db);
    await proxies.create(poolProxy('pool-a', 1));
    await proxies.create(poolProxy('pool-b', 2));
    await new FirestoreWorkerStore(db).put(record('gw-1', new Date(clock.now().getTime() + 60_000)), null);
    const call = startApi();
    expect(await gw1Snapshot()).toEqual(['pool-a', 'pool-b']);
    const epoch = (await ownership.read()).epoch;

    await setCordon(call, 'pool-b', true);
    // Out of the worker's snapshot, as a proxy that stopped being healthy: the worker drains it.
    expect(await gw1Snapshot()).toEqual(['pool-a']);
    // Its ownership stays where it was (no drain to another worker, no epoch moved).
    const owned = await ownership.read();
    expect(owned.records.get('pool-b')?.owner).toBe('gw-1');
    expect(owned.epoch).toBe(epoch);
    // Taken out of the pool while cordoned: the 409 names the cordon, counted before the gateway's hold (a
    // drain ends that one; only an uncordon ends the cordon).
    const patched = await call('PATCH', '/v1/proxies/pool-b/spec', { gatewayPool: false }, 'admin');
    expect(patched.status).toBe(200);
    await pollUntil(
      async () => api?.catalog.get('pool-b'),
      (p) => p?.spec.gatewayPool === false,
      10_000,
      'the lease API sees pool-b out of the pool',
    );
    expect((await call('GET', '/v1/proxies?leasable=true')).body.count).toBe(0);
    const refused = await call('POST', '/v1/leases', {});
    expect(refused).toMatchObject({ status: 409, body: { error: 'no_match', cordoned: 1 } });

    // Back in the pool and uncordoned: in the next snapshot again.
    expect((await call('PATCH', '/v1/proxies/pool-b/spec', { gatewayPool: true }, 'admin')).status).toBe(200);
    await setCordon(call, 'pool-b', false);
    expect(await gw1Snapshot()).toEqual(['pool-a', 'pool-b']);
  });
});

// Not a cordon, but the same path: a merge patch of the spec that the lease API sees before reconcile's
// pass (docs/leases.md: `healthy`). An external proxy's edited endpoint host is not handed out on the old
// host's verdict, while an edit that moves no endpoint (attributes) leaves it leasable.
describe('an external proxy whose endpoint host was edited', () => {
  it('is not healthy nor leasable until reconcile has seen the edit; an attribute edit changes nothing', async () => {
    await writeFleet(db, [proxy('e-1', { attributes: { site: 'shop' }, capacity: 4, external: true })]);
    const call = startApi();
    const edit = async (
      patch: Record<string, unknown>,
      seen: (p: { spec: Record<string, unknown> }) => boolean,
    ) => {
      expect((await call('PATCH', '/v1/proxies/e-1/spec', patch, 'admin')).status).toBe(200);
      await pollUntil(
        async () => {
          await api?.catalog.ready(10_000);
          return api?.catalog.get('e-1') as { spec: Record<string, unknown> } | undefined;
        },
        (p) => p !== undefined && seen(p),
        10_000,
        'the lease API sees the edit',
      );
    };

    await edit(
      { attributes: { site: 'shop', tier: 'b' } },
      (p) => (p.spec.attributes as { tier?: string }).tier === 'b',
    );
    expect((await call('GET', '/v1/proxies')).body.proxies[0]).toMatchObject({
      healthy: true,
      leasable: true,
    });

    await edit(
      { endpoint: { host: 'moved.example' } },
      (p) => (p.spec.endpoint as { host: string }).host === 'moved.example',
    );
    const listed = (await call('GET', '/v1/proxies')).body.proxies[0];
    expect(listed).toMatchObject({
      status: { phase: 'Ready', ip: 'proxy.example' },
      healthy: false,
      leasable: false,
    });
    expect((await call('GET', '/v1/proxies?leasable=true')).body).toMatchObject({ count: 0 });
    const refused = await call('POST', '/v1/leases', { selector: { site: 'shop' } });
    expect(refused).toMatchObject({ status: 409, body: { error: 'no_match', considered: 1, unhealthy: 1 } });
  });
});
