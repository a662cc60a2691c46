// Group commit on the Firestore emulator: preconditioned writes of different documents that queue behind a
// busy store share one commit, and a write whose precondition has gone stale fails alone — the others in
// its commit land, each with its own answer.
import { Firestore, type Timestamp, type WriteBatch } from '@google-cloud/firestore';
import { afterAll, expect, it } from 'vitest';
import { GroupCommitter } from '../../shared/src/adapters/firestore/group-commit.js';
import { testProjectId } from '../support/emulators.js';

const db = new Firestore({ projectId: testProjectId() });
afterAll(() => db.terminate());

it('combines queued writes, and splits a commit that one stale precondition fails', async () => {
  const col = db.collection('groupCommitTest');
  const docs = ['a', 'b', 'c', 'd'].map((id) => col.doc(id));
  const versions = await Promise.all(docs.map(async (d) => (await d.set({ n: 0 })).writeTime));
  // "c" moves on: a write computed from its old version must fail its precondition.
  await docs[2]!.set({ n: 'elsewhere' });

  const committer = new GroupCommitter<WriteBatch, Timestamp>(() => db.batch(), { maxInFlight: 1 });
  const write = (i: number) =>
    committer
      .commit([docs[i]!.path], (b) => {
        b.update(docs[i]!, { n: 1 }, { lastUpdateTime: versions[i]! });
        return 1;
      })
      .then(
        ([r]) => ({ ok: true as const, t: r!.writeTime }),
        (err: { code?: number }) => ({ ok: false as const, code: err.code }),
      );
  const results = await Promise.all([0, 1, 2, 3].map(write));

  expect(results.map((r) => (r.ok ? 'ok' : r.code))).toEqual(['ok', 'ok', 9, 'ok']);
  // The first went alone; b, c and d queued behind it and went together, which "c" failed: three alone.
  expect(committer.counts).toEqual({ commits: 2, combined: 1, splits: 1 });
  const stored = await Promise.all(docs.map(async (d) => (await d.get()).get('n')));
  expect(stored).toEqual([1, 1, 'elsewhere', 1]);

  // The time a caller gets back is its document's new version: the next write may be conditioned on it.
  const d = results[3] as { t: Timestamp };
  await expect(docs[3]!.update({ n: 2 }, { lastUpdateTime: d.t })).resolves.toBeDefined();
  await expect(docs[3]!.update({ n: 3 }, { lastUpdateTime: d.t })).rejects.toMatchObject({ code: 9 });
});
