// DELETE /v1/gateway/reclaims/{proxy} asks for a snapshot pass when there was a reclaim to drop. The
// Firestore client sends a commit again when its answer was lost (it resends on ABORTED, RESOURCE_EXHAUSTED
// and UNAVAILABLE): the first sending deleted the reclaim. A delete preconditioned on `exists` then failed
// NOT_FOUND on the resend, read as "there was none": the route answered 204 and asked for no pass, and the
// proxy came back to the workers' snapshots only at the next tick, a minute on. And a POST given up at its
// deadline (503) that landed asked for no pass either. On the Firestore emulator, with the real client; the
// second sending is test/support/replayed-commit-firestore.ts.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { FirestoreReclaimStore } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { WorkerStoreError } from '../../shared/src/ports/workers.js';
import type { ReclaimStore } from '../../shared/src/ports/workers-ownership.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { gatewayAdminApp } from '../support/gateway-admin-app.js';
import { replayCommits } from '../support/replayed-commit-firestore.js';

const now = new Date('2026-12-07T11:00:00Z');
const projectId = testProjectId('demo-reclaim-replayed');
const db = new Firestore({ projectId });
/** The reclaim store's own client: its commits are sent twice while `replaying`. */
const replayDb = new Firestore({ projectId });
let replaying = false;
const replayed = replayCommits(replayDb, () => replaying);
afterAll(async () => {
  await Promise.all([db.terminate(), replayDb.terminate()]);
  await releaseProject(projectId);
});

const reclaimStore = new FirestoreReclaimStore(replayDb);
/** The next put lands, then its call fails as one given up at its deadline does. */
let cutNextPut = false;
const reclaims: ReclaimStore = {
  list: (at) => reclaimStore.list(at),
  delete: (proxy) => reclaimStore.delete(proxy),
  put: async (r) => {
    await reclaimStore.put(r);
    if (!cutNextPut) return;
    cutNextPut = false;
    throw new WorkerStoreError('unavailable', 'deadline exceeded; the write may still land');
  },
};
const { passes, send } = gatewayAdminApp(db, { now, reclaims });
const reclaimed = async () => (await new FirestoreReclaimStore(db).list(now)).map((r) => r.proxy);

describe('a reclaim DELETE whose commit the client sent again after it landed', () => {
  it('answers 204 and asks for the pass: the reclaim was there to drop', async () => {
    await new FirestoreProxyStore(db).create(aProxy({ name: 'replayed-rc' }));
    expect(await send('POST', '/reclaims/replayed-rc', { ttlSeconds: 600 })).toBe(201);
    expect(await reclaimed()).toEqual(['replayed-rc']);
    passes.length = 0;
    const before = replayed.replayed;
    replaying = true;
    try {
      expect(await send('DELETE', '/reclaims/replayed-rc')).toBe(204);
    } finally {
      replaying = false;
    }
    expect(replayed.replayed - before).toBe(1);
    expect(await reclaimed()).toEqual([]);
    expect(passes).toEqual(['admin']);
  });

  it('with no reclaim, answers 204 and asks for none, resent or not', async () => {
    await new FirestoreProxyStore(db).create(aProxy({ name: 'none-rc' }));
    passes.length = 0;
    replaying = true;
    try {
      expect(await send('DELETE', '/reclaims/none-rc')).toBe(204);
    } finally {
      replaying = false;
    }
    expect(await send('DELETE', '/reclaims/none-rc')).toBe(204);
    expect(passes).toEqual([]);
  });
});

describe('a reclaim POST answered 503 that landed', () => {
  it('asks for the pass before its 503; the retry asks again', async () => {
    await new FirestoreProxyStore(db).create(aProxy({ name: 'landed-post-rc' }));
    passes.length = 0;
    cutNextPut = true;
    expect(await send('POST', '/reclaims/landed-post-rc', { ttlSeconds: 600 })).toBe(503);
    expect(await reclaimed()).toEqual(['landed-post-rc']);
    expect(passes).toEqual(['admin']);
    expect(await send('POST', '/reclaims/landed-post-rc', { ttlSeconds: 600 })).toBe(201);
    expect(passes).toEqual(['admin', 'admin']);
  });
});
