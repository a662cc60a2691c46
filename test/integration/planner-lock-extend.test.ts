// FirestoreOwnershipStore.extendLock: the heartbeat of a pass's planner lock. It extends only a lock that
// is still its holder's — never one that lapsed and was taken (even if given back since): that pass may
// have moved the proxies this one planned on. And releaseLock, which gives up the pass's own lock even when
// its own last write landed unanswered. On the Firestore emulator.
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { failCommitsAfterLanding } from '../support/replayed-commit-firestore.js';

const DEADLINE_EXCEEDED = 4;
const projectId = testProjectId('demo-lockext');
const db = new Firestore({ projectId });
const ownership = new FirestoreOwnershipStore(db);
// Its every commit lands, then its call fails.
const failingDb = new Firestore({ projectId });
const failed = failCommitsAfterLanding(failingDb, DEADLINE_EXCEEDED);
const failing = new FirestoreOwnershipStore(failingDb);
afterAll(() => Promise.all([db.terminate(), failingDb.terminate()]));

const T0 = new Date('2026-12-07T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

beforeEach(async () => {
  await clearProject(projectId);
});

describe('extendLock', () => {
  it('moves the expiry on: another pass finds the planner busy past the lifetime it was taken for', async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    const extended = await ownership.extendLock('pass-a', taken!, at(50));
    expect(extended).not.toBeNull();
    expect(extended).not.toBe(taken);
    expect((await ownership.read()).lock).toEqual({ holder: 'pass-a', until: at(50) });
    expect(await ownership.acquireLock('pass-b', at(40), at(70))).toBeNull();
    // The version it answers is the one the pass's next write (a commit, its release) is guarded by.
    await ownership.releaseLock('pass-a', extended!);
    expect((await ownership.read()).lock).toBeNull();
  });

  it('refuses a lock that lapsed and was taken by another pass', async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    await ownership.acquireLock('pass-b', at(31), at(61));
    expect(await ownership.extendLock('pass-a', taken!, at(60))).toBeNull();
    expect((await ownership.read()).lock).toEqual({ holder: 'pass-b', until: at(61) });
  });

  it('refuses it even once that pass gave it back', async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    const b = await ownership.acquireLock('pass-b', at(31), at(61));
    await ownership.releaseLock('pass-b', b!);
    expect(await ownership.extendLock('pass-a', taken!, at(60))).toBeNull();
    expect((await ownership.read()).lock).toBeNull();
  });

  it('an extension resent after it landed (its answer lost) is its own, not a lock lost', async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    const first = await ownership.extendLock('pass-a', taken!, at(50));
    const resent = await ownership.extendLock('pass-a', taken!, at(50));
    expect(resent).toBe(first);
  });

  it('an extension that landed before its call failed (DEADLINE_EXCEEDED) is its own: its version frees the lock', async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    const before = failed.failed;
    const extended = await failing.extendLock('pass-a', taken!, at(50));
    expect(failed.failed).toBe(before + 1);
    expect(extended).not.toBeNull();
    expect(extended).not.toBe(taken);
    await ownership.releaseLock('pass-a', extended!);
    expect((await ownership.read()).lock).toBeNull();
    expect(await ownership.acquireLock('pass-b', at(40), at(70))).not.toBeNull();
  });

  it('an extension that landed only after its check (its call failed): the next beat, on the version before it, still extends the lock', async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    // The beat at T0+10 s: its call failed, its write landed after the re-read — the pass kept `taken`.
    await landedUnanswered('pass-a', at(40));
    const extended = await ownership.extendLock('pass-a', taken!, at(50));
    expect(extended).not.toBeNull();
    expect((await ownership.read()).lock).toEqual({ holder: 'pass-a', until: at(50) });
    expect((await ownership.read()).token).toBe(extended);
    await ownership.releaseLock('pass-a', extended!);
    expect((await ownership.read()).lock).toBeNull();
  });

  it('one whose second write lands before its call fails too is its own all the same', async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    await landedUnanswered('pass-a', at(40));
    const extended = await failing.extendLock('pass-a', taken!, at(50));
    expect(extended).not.toBeNull();
    expect((await ownership.read()).lock).toEqual({ holder: 'pass-a', until: at(50) });
    expect((await ownership.read()).token).toBe(extended);
  });

  it("never extends another pass's lock: one taken after the pass's own unanswered write lapsed", async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    await landedUnanswered('pass-a', at(40));
    await ownership.acquireLock('pass-b', at(41), at(71));
    expect(await ownership.extendLock('pass-a', taken!, at(50))).toBeNull();
    expect(await failing.extendLock('pass-a', taken!, at(50))).toBeNull();
    expect((await ownership.read()).lock).toEqual({ holder: 'pass-b', until: at(71) });
  });
});

describe('releaseLock', () => {
  it("gives up the pass's own lock after its write landed unanswered (the pass holds the version before it)", async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    await landedUnanswered('pass-a', at(40));
    await ownership.releaseLock('pass-a', taken!);
    expect((await ownership.read()).lock).toBeNull();
    expect(await ownership.acquireLock('pass-b', at(12), at(42))).not.toBeNull();
  });

  it('a release that landed before its call failed is done, not an error', async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    await expect(failing.releaseLock('pass-a', taken!)).resolves.toBeUndefined();
    expect((await ownership.read()).lock).toBeNull();
  });

  it("never gives up another pass's lock, nor one given back and taken again", async () => {
    const taken = await ownership.acquireLock('pass-a', T0, at(30));
    await landedUnanswered('pass-a', at(40));
    const b = await ownership.acquireLock('pass-b', at(41), at(71));
    await ownership.releaseLock('pass-a', taken!);
    await failing.releaseLock('pass-a', taken!);
    expect((await ownership.read()).lock).toEqual({ holder: 'pass-b', until: at(71) });
    await ownership.releaseLock('pass-b', b!);
    await ownership.acquireLock('pass-c', at(72), at(102));
    await ownership.releaseLock('pass-a', taken!);
    expect((await ownership.read()).lock).toEqual({ holder: 'pass-c', until: at(102) });
  });
});

/** A write of `holder`'s lock (an extension) that landed while the pass never learnt its version. */
async function landedUnanswered(holder: string, until: Date): Promise<void> {
  await db.doc('ownership/state').update({ lock: { holder, until: Timestamp.fromDate(until) } });
}
