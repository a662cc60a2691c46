// The local plane's stand-in for Firestore's TTL policies (emulators/local-plane/ttl-sweeper.ts), on the
// Firestore emulator, which runs none: what expired more than the grace ago goes, in every collection
// with a policy; what is still live, expired within the grace, or in a collection without a policy stays.
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired, TTL_POLICIES } from '../../emulators/local-plane/ttl-sweeper.js';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { firestoreHost, releaseProject, testProjectId } from '../support/emulators.js';

const projectId = testProjectId('demo-ttl-sweeper');
let db: Firestore;
const now = new Date('2026-12-04T12:00:00Z');
const GRACE = 10 * 60_000;
const ago = (ms: number) => Timestamp.fromMillis(now.getTime() - ms);

beforeAll(() => {
  db = new Firestore({ projectId, host: `${firestoreHost().host}:${firestoreHost().port}`, ssl: false });
});

afterAll(async () => {
  await db.terminate();
  await releaseProject(projectId);
});

const ids = async (collection: string) =>
  (await db.collection(collection).listDocuments()).map((d) => d.id).sort();

describe('the local TTL sweep', () => {
  it('deletes what expired past the grace in every TTL collection, and nothing else', async () => {
    for (const { collection, field } of TTL_POLICIES) {
      await db
        .collection(collection)
        .doc('long-expired')
        .set({ [field]: ago(GRACE + 60_000) });
      await db
        .collection(collection)
        .doc('just-expired')
        .set({ [field]: ago(60_000) });
      await db
        .collection(collection)
        .doc('live')
        .set({ [field]: ago(-3_600_000) });
    }
    // A collection without a policy keeps its documents, whatever fields they carry.
    await db
      .collection(Collections.jobRuns)
      .doc('old')
      .set({ expireAt: ago(GRACE * 10) });

    expect(await sweepExpired(db, now, GRACE)).toBe(TTL_POLICIES.length);
    for (const { collection } of TTL_POLICIES)
      expect(await ids(collection)).toEqual(['just-expired', 'live']);
    expect(await ids(Collections.jobRuns)).toEqual(['old']);
    expect(await sweepExpired(db, now, GRACE)).toBe(0);
  });
});
