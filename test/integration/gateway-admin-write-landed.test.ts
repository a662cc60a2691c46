// The gateway admin writes the snapshot pass plans with — PUT /routing and DELETE /reclaims/{proxy} — may
// be given up at their deadline (503) and land all the same. The caller's retry then finds the change made
// (the routing unchanged, the reclaim gone) and asks for no pass, so the change reached the workers only at
// the next tick, a minute on. The route asks for the pass before its 503. Against the Firestore emulator,
// with stores whose write lands and then fails as a deadline does.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { FirestoreReclaimStore } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreRoutingStore } from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { WorkerStoreError } from '../../shared/src/ports/workers.js';
import type { ReclaimStore, RoutingStore } from '../../shared/src/ports/workers-ownership.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { gatewayAdminApp } from '../support/gateway-admin-app.js';

const projectId = testProjectId('demo-admin-landed');
const db = new Firestore({ projectId });
afterAll(async () => {
  await db.terminate();
  await releaseProject(projectId);
});

/** The next write lands, then its call fails as one given up at its deadline does. */
let cutNext = false;
const cut = () => {
  if (!cutNext) return;
  cutNext = false;
  throw new WorkerStoreError('unavailable', 'deadline exceeded; the write may still land');
};
const routingStore = new FirestoreRoutingStore(db);
const routing: RoutingStore = {
  get: () => routingStore.get(),
  revision: () => routingStore.revision(),
  put: async (config, precondition) => {
    const write = await routingStore.put(config, precondition);
    cut();
    return write;
  },
};
const reclaimStore = new FirestoreReclaimStore(db);
const reclaims: ReclaimStore = {
  list: (now) => reclaimStore.list(now),
  put: (r) => reclaimStore.put(r),
  delete: async (proxy) => {
    const deleted = await reclaimStore.delete(proxy);
    cut();
    return deleted;
  },
};
const { passes, send } = gatewayAdminApp(db, { now: new Date('2026-12-07T11:00:00Z'), routing, reclaims });

describe('a gateway admin write answered 503 that landed', () => {
  it('PUT /routing asks for the pass before its 503; the retry, unchanged, asks for none', async () => {
    const routes = [{ name: 'all', match: { hosts: ['*'] }, policy: 'least-active' }];
    passes.length = 0;
    cutNext = true;
    expect(await send('PUT', '/routing', { routes })).toBe(503);
    expect((await routingStore.get())?.routes).toMatchObject(routes);
    expect(passes).toEqual(['admin']);
    expect(await send('PUT', '/routing', { routes })).toBe(200);
    expect(passes).toEqual(['admin']);
  });

  it('DELETE /reclaims/{proxy} asks for the pass before its 503; the retry, nothing to delete, asks for none', async () => {
    await new FirestoreProxyStore(db).create(aProxy({ name: 'landed-rc' }));
    expect(await send('POST', '/reclaims/landed-rc', { ttlSeconds: 600 })).toBe(201);
    passes.length = 0;
    cutNext = true;
    expect(await send('DELETE', '/reclaims/landed-rc')).toBe(503);
    expect((await reclaimStore.list(new Date('2026-12-07T11:00:00Z'))).map((r) => r.proxy)).toEqual([]);
    expect(passes).toEqual(['admin']);
    expect(await send('DELETE', '/reclaims/landed-rc')).toBe(204);
    expect(passes).toEqual(['admin']);
  });
});
