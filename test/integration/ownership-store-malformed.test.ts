// An ownership entry edited by hand into something that no longer fits (shared/src/adapters/firestore/
// ownership-store.ts): read back owned by the worker it names — so that the planner drains it from that
// worker rather than hand it to a second one at once — and by "?" only when it names none. Against the
// Firestore emulator with the real adapter.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import {
  FirestoreOwnershipStore,
  shardDocId,
  shardOf,
} from '../../shared/src/adapters/firestore/ownership-store.js';
import { clearProject, testProjectId } from '../support/emulators.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const ownership = new FirestoreOwnershipStore(db);
afterAll(() => db.terminate());
beforeEach(() => clearProject(projectId));

const put = (proxy: string, entry: unknown) =>
  db
    .collection(Collections.ownership)
    .doc(shardDocId(shardOf(proxy)))
    .set({ proxies: { [proxy]: entry } }, { merge: true });

describe('an ownership entry that does not fit', () => {
  it('keeps the owner it names, to be drained from at once; "?" only when it names none', async () => {
    await put('fits', { owner: 'gw-a', since: 4, drainEpoch: null });
    await put('since-edited', { owner: 'gw-a', since: 'yesterday', drainEpoch: null });
    await put('no-owner', { since: 3, drainEpoch: null });
    await put('owner-not-text', { owner: 7, since: 3, drainEpoch: null });
    const { records } = await ownership.read();
    expect(records.get('fits')).toEqual({ proxy: 'fits', owner: 'gw-a', since: 4, drainEpoch: null });
    expect(records.get('since-edited')).toEqual({
      proxy: 'since-edited',
      owner: 'gw-a',
      since: 0,
      drainEpoch: 0,
    });
    expect(records.get('no-owner')).toMatchObject({ owner: '?', drainEpoch: 0 });
    expect(records.get('owner-not-text')).toMatchObject({ owner: '?', drainEpoch: 0 });
  });
});
