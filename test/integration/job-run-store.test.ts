// FirestoreJobRunStore against the Firestore emulator: a claim starts a run unless one started within the
// gap — or, for a claim naming its tick (requeue), unless the run is another delivery of that tick; a run's
// finish lands only on its own record — when runs overlap (snapshot claims with no gap; a late requeue tick's
// sweep still runs when the next tick's starts), the earlier run finishing late must not stamp its result
// onto the later run that is still going;
// a run's window start (the probe's) is recorded with its end, its deadline with its claim, and both handed
// to the next claim; where the next run's window starts (requeue's) is carried by the claim while it runs.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { FirestoreJobRunStore } from '../../shared/src/adapters/firestore/job-run-store.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { failNextCommitAfterLanding } from '../support/replayed-commit-firestore.js';

const db = new Firestore({ projectId: testProjectId() });
const runs = new FirestoreJobRunStore(db);
afterAll(() => db.terminate());

const at = (s: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, s));

describe('FirestoreJobRunStore', () => {
  it('claims, refuses a duplicate within the gap, and records the finish of its own run', async () => {
    expect(await runs.claim('job-a', at(0), 30_000)).toEqual({ previous: null });
    expect(await runs.claim('job-a', at(10), 30_000)).toBeNull();
    await runs.finish('job-a', {
      startedAt: at(0),
      finishedAt: at(5),
      ok: true,
      counts: { n: 3 },
      error: null,
    });
    expect(await runs.get('job-a')).toEqual({
      job: 'job-a',
      startedAt: at(0),
      finishedAt: at(5),
      ok: true,
      counts: { n: 3 },
      error: null,
      windowStart: null,
      nextWindowStart: null,
      deadline: null,
      tick: null,
    });
    const next = await runs.claim('job-a', at(40), 30_000);
    expect(next?.previous?.startedAt).toEqual(at(0));
    expect(next?.previous?.counts).toEqual({ n: 3 });
  });

  // A tick that records its failure and throws is redelivered by Pub/Sub (the probe's ~10 s on, inside its
  // 30 s gap): that delivery is the retry, not a duplicate. One still running, or that ended well, is.
  it('with retryAfterFailure, a delivery within the gap after a recorded failure claims; after a success or while running not', async () => {
    expect(await runs.claim('job-f', at(0), 30_000, undefined, true)).toEqual({ previous: null });
    expect(await runs.claim('job-f', at(5), 30_000, undefined, true)).toBeNull(); // still running
    await runs.finish('job-f', { startedAt: at(0), finishedAt: at(6), ok: false, counts: {}, error: 'x' });
    // A job that acknowledges the failures it records (gc): the delivery after one is a duplicate.
    expect(await runs.claim('job-f', at(8), 30_000)).toBeNull();
    const retry = await runs.claim('job-f', at(10), 30_000, undefined, true);
    expect(retry?.previous).toMatchObject({ startedAt: at(0), ok: false });
    await runs.finish('job-f', { startedAt: at(10), finishedAt: at(12), ok: true, counts: {}, error: null });
    expect(await runs.claim('job-f', at(20), 30_000, undefined, true)).toBeNull(); // ended well, within the gap
  });

  // The requeue claimed with half a period's gap from the last claim: the 12:00 tick delivered 31 s late
  // (a cold start, a push retry's backoff) and the 12:01 tick, claimed 29.5 s after it, was refused as its
  // duplicate — nothing polled the due times of the next minute.
  it('a claim naming its tick refuses only another delivery of that tick, however soon another tick comes', async () => {
    const tick = (s: number) => at(s).toISOString();
    // The 12:00:00 tick, claimed 31 s late; the 12:01:00 tick, claimed 29.5 s after it.
    expect(await runs.claim('job-k', at(31), 0, at(59), true, tick(0))).toEqual({ previous: null });
    expect(await runs.claim('job-k', at(40), 0, at(59), true, tick(0))).toBeNull(); // a copy: still running
    await runs.finish('job-k', { startedAt: at(31), finishedAt: at(59), ok: true, counts: {}, error: null });
    const onTime = await runs.claim('job-k', new Date(at(60).getTime() + 500), 0, at(119), true, tick(60));
    expect(onTime?.previous).toMatchObject({ startedAt: at(31), tick: tick(0) });
    expect(await runs.get('job-k')).toMatchObject({ tick: tick(60), finishedAt: null, error: null });
    await runs.finish('job-k', {
      startedAt: new Date(at(60).getTime() + 500),
      finishedAt: at(119),
      ok: true,
      counts: {},
      error: null,
    });
    expect(await runs.claim('job-k', at(150), 0, at(119), true, tick(60))).toBeNull(); // a copy: ended ok
    // A sweep recorded failed (stopped early): another delivery of its tick takes its window up.
    await runs.claim('job-k', at(180), 0, at(239), true, tick(180));
    await runs.finish('job-k', {
      startedAt: at(180),
      finishedAt: at(181),
      ok: false,
      counts: {},
      error: 'x',
    });
    expect((await runs.claim('job-k', at(185), 0, at(239), true, tick(180)))?.previous).toMatchObject({
      startedAt: at(180),
      ok: false,
    });
    // A run of its tick that never recorded its end is named once it is past its deadline, not before: a
    // run-now tick's sweep still runs when the next scheduled tick's starts.
    await runs.claim('job-k', at(271), 0, at(330), true, tick(271)); // run now, at 12:04:31
    await runs.claim('job-k', at(300), 0, at(359), true, tick(300));
    expect(await runs.get('job-k')).toMatchObject({ startedAt: at(300), error: null });
    await runs.claim('job-k', at(360), 0, at(419), true, tick(360));
    expect((await runs.get('job-k'))?.error).toContain('never recorded its end');
  });

  it('an overlapped run finishing late leaves the later run’s record alone', async () => {
    await runs.claim('job-b', at(0), 0);
    await runs.claim('job-b', at(2), 0); // the next tick starts while the first still runs
    await runs.finish('job-b', {
      startedAt: at(0),
      finishedAt: at(3),
      ok: false,
      counts: { n: 1 },
      error: 'x',
    });
    const running = await runs.get('job-b');
    expect(running).toMatchObject({ startedAt: at(2), finishedAt: null, ok: null, error: null });
    await runs.finish('job-b', {
      startedAt: at(2),
      finishedAt: at(4),
      ok: true,
      counts: { n: 2 },
      error: null,
    });
    expect(await runs.get('job-b')).toMatchObject({
      startedAt: at(2),
      finishedAt: at(4),
      ok: true,
      counts: { n: 2 },
    });
  });

  it('a run that never recorded its end (crash, timeout) is named by the next claim of a gapped job', async () => {
    await runs.claim('job-d', at(0), 30_000); // dies: no finish
    await runs.claim('job-d', at(40), 30_000);
    const running = await runs.get('job-d');
    expect(running).toMatchObject({ startedAt: at(40), finishedAt: null, ok: null });
    expect(running?.error).toContain(at(0).toISOString());
    expect(running?.error).toContain('never recorded its end');
    // Its own end replaces the warning.
    await runs.finish('job-d', { startedAt: at(40), finishedAt: at(41), ok: true, counts: {}, error: null });
    expect(await runs.get('job-d')).toMatchObject({ ok: true, error: null });
    // A run that finished leaves nothing to say.
    await runs.claim('job-d', at(80), 30_000);
    expect(await runs.get('job-d')).toMatchObject({ startedAt: at(80), error: null });
  });

  it('a run records where its window started with its end; the next claim hands it on and clears it', async () => {
    // The probe: a failed run's window is probed again by the next run, from where that window started
    // (the deadline of the run before it), not from the failed run's start (docs/health.md).
    await runs.claim('job-e', at(0), 30_000);
    await runs.finish('job-e', {
      startedAt: at(0),
      finishedAt: at(3),
      ok: false,
      counts: {},
      error: 'x',
      windowStart: at(-10),
    });
    expect(await runs.get('job-e')).toMatchObject({ ok: false, windowStart: at(-10) });
    const next = await runs.claim('job-e', at(60), 30_000);
    expect(next?.previous).toMatchObject({ startedAt: at(0), ok: false, windowStart: at(-10) });
    // While the new run runs (or after it was killed), its record holds no window of the run before.
    expect(await runs.get('job-e')).toMatchObject({ startedAt: at(60), ok: null, windowStart: null });
    // A run that records none (the other jobs) reads null.
    await runs.finish('job-e', { startedAt: at(60), finishedAt: at(61), ok: true, counts: {}, error: null });
    expect(await runs.get('job-e')).toMatchObject({ ok: true, windowStart: null });
  });

  it("a run records where the next run's window starts; the next claim hands it on and carries it while it runs", async () => {
    // The requeue sweep: where its drift range ended, for the sweep of the next tick on any instance.
    await runs.claim('job-g', at(0), 0);
    await runs.finish('job-g', {
      startedAt: at(0),
      finishedAt: at(55),
      ok: true,
      counts: {},
      error: null,
      nextWindowStart: at(60),
    });
    expect(await runs.get('job-g')).toMatchObject({ finishedAt: at(55), nextWindowStart: at(60) });
    const next = await runs.claim('job-g', at(61), 0, at(119));
    expect(next?.previous).toMatchObject({ startedAt: at(0), nextWindowStart: at(60) });
    // The claim wrote null there: a run that then died (a crash, the function's timeout) left the run after
    // it no way to know where the range it did not finish starts, and the sweep skipped its drift slots.
    expect(await runs.get('job-g')).toMatchObject({
      startedAt: at(61),
      finishedAt: null,
      nextWindowStart: at(60),
      deadline: at(119),
    });
    // It dies: the run after it is handed the last finished run's, past the dead one's deadline.
    const after = await runs.claim('job-g', at(121), 0);
    expect(after?.previous).toMatchObject({
      startedAt: at(61),
      finishedAt: null,
      nextWindowStart: at(60),
      deadline: at(119),
    });
    // A run's own end replaces what its claim carried.
    await runs.finish('job-g', {
      startedAt: at(121),
      finishedAt: at(175),
      ok: true,
      counts: {},
      error: null,
      nextWindowStart: at(180),
    });
    expect(await runs.get('job-g')).toMatchObject({ nextWindowStart: at(180) });
  });

  // recordRun records a run whose work threw with no nextWindowStart, and the finish wrote null over the one
  // the claim carried: the requeue sweep after a thrown one started its drift range at its own tick, and the
  // slots since the last finished run's end were nobody's.
  it("a run that ends without saying where the next run's window starts keeps the one its claim carried", async () => {
    await runs.claim('job-l', at(0), 0);
    await runs.finish('job-l', {
      startedAt: at(0),
      finishedAt: at(55),
      ok: true,
      counts: {},
      error: null,
      nextWindowStart: at(60),
    });
    await runs.claim('job-l', at(60), 0, at(119), true, at(60).toISOString());
    await runs.finish('job-l', {
      startedAt: at(60),
      finishedAt: at(70),
      ok: false,
      counts: {},
      error: 'a bug',
    });
    expect(await runs.get('job-l')).toMatchObject({ ok: false, error: 'a bug', nextWindowStart: at(60) });
    const next = await runs.claim('job-l', at(120), 0, at(179), true, at(120).toISOString());
    expect(next?.previous).toMatchObject({ finishedAt: at(70), ok: false, nextWindowStart: at(60) });
    // One that says none is left (null: the probe's run whose budget left no slots) writes that.
    await runs.finish('job-l', {
      startedAt: at(120),
      finishedAt: at(175),
      ok: true,
      counts: {},
      error: null,
      nextWindowStart: null,
    });
    expect(await runs.get('job-l')).toMatchObject({ ok: true, nextWindowStart: null });
  });

  it('a run records its deadline with its claim; its end keeps it, and the next claim hands it on', async () => {
    // The probe: the next run starts where this run's coverage ends, whatever loop its own deployment has.
    await runs.claim('job-h', at(0), 30_000, at(50));
    expect(await runs.get('job-h')).toMatchObject({ startedAt: at(0), ok: null, deadline: at(50) });
    await runs.finish('job-h', { startedAt: at(0), finishedAt: at(52), ok: true, counts: {}, error: null });
    expect(await runs.get('job-h')).toMatchObject({ ok: true, deadline: at(50) });
    const next = await runs.claim('job-h', at(60), 30_000);
    expect(next?.previous).toMatchObject({ startedAt: at(0), deadline: at(50) });
    // A claim without one (the other jobs) records none.
    expect(await runs.get('job-h')).toMatchObject({ startedAt: at(60), deadline: null });
  });

  it('of two copies of a tick claiming in the same millisecond, the one whose commit lost claims nothing', async () => {
    // Copy A stages its claim; copy B's commit lands first, so A's is refused (ABORTED) and A's
    // transaction runs again — reading B's record, whose start time is A's own.
    const projectId = testProjectId();
    const a = new Firestore({ projectId });
    const b = new Firestore({ projectId });
    try {
      const copyA = new FirestoreJobRunStore(a);
      const copyB = new FirestoreJobRunStore(b);
      expect(await copyA.claim('job-j', at(0), 30_000)).toEqual({ previous: null });
      let bClaimed: unknown = 'not yet';
      loseNextCommitTo(a, async () => {
        bClaimed = await copyB.claim('job-j', at(40), 30_000);
      });
      expect(await copyA.claim('job-j', at(40), 30_000)).toBeNull();
      expect(bClaimed).toMatchObject({ previous: { startedAt: at(0) } });
      // A copy whose commit failed after landing is still told it claimed (the test above), and the
      // record is B's run's.
      expect(await copyA.get('job-j')).toMatchObject({ startedAt: at(40), finishedAt: null });
    } finally {
      await Promise.all([a.terminate(), b.terminate()]);
      await releaseProject(projectId);
    }
  });

  // The probe's claim was taken for a duplicate delivery: the run probed nothing and left its record
  // "in progress".
  it('a claim whose commit landed before its call failed is still the claim', async () => {
    const projectId = testProjectId();
    const flaky = new Firestore({ projectId });
    try {
      const store = new FirestoreJobRunStore(flaky);
      failNextCommitAfterLanding(flaky, 14 /* UNAVAILABLE */);
      expect(await store.claim('job-i', at(0), 30_000)).toEqual({ previous: null });
      expect(await store.get('job-i')).toMatchObject({ startedAt: at(0), ok: null });
      // Landed over a previous run: the claim hands on that run, not the record it wrote itself.
      await store.finish('job-i', { startedAt: at(0), finishedAt: at(1), ok: true, counts: {}, error: null });
      failNextCommitAfterLanding(flaky, 4 /* DEADLINE_EXCEEDED */);
      const next = await store.claim('job-i', at(40), 30_000);
      expect(next?.previous).toMatchObject({ startedAt: at(0), finishedAt: at(1), ok: true });
      // A real duplicate is still refused.
      expect(await store.claim('job-i', at(41), 30_000)).toBeNull();
      // Without a gap (requeue, snapshot) the retry claimed again, handing on its own record as the run
      // before: the requeue sweep lost the window start that run had recorded.
      await store.finish('job-i', {
        startedAt: at(40),
        finishedAt: at(41),
        ok: true,
        counts: {},
        error: null,
      });
      failNextCommitAfterLanding(flaky, 14 /* UNAVAILABLE */);
      expect((await store.claim('job-i', at(80), 0))?.previous).toMatchObject({ startedAt: at(40) });
    } finally {
      await flaky.terminate();
      await releaseProject(projectId);
    }
  });

  it('finishing a run whose record is gone writes nothing', async () => {
    await runs.finish('job-c', { startedAt: at(0), finishedAt: at(1), ok: true, counts: {}, error: null });
    expect(await runs.get('job-c')).toBeNull();
  });

  it('stores only what a JobRun reads back: no field is written that nothing reads', async () => {
    await runs.claim('job-f', at(0), 0);
    await runs.finish('job-f', { startedAt: at(0), finishedAt: at(1), ok: true, counts: {}, error: null });
    await runs.claim('job-f', at(10), 0); // a claim over a previous run
    const stored = (await db.collection('jobRuns').doc('job-f').get()).data()!;
    const read = (await runs.get('job-f'))!;
    // claimId is the store's own: what a claim's retried transaction knows its own record by.
    expect(Object.keys(stored).sort()).toEqual([...Object.keys(read), 'claimId'].sort());
  });
});

/**
 * Patches `db` so that its next commit is not sent but refused as contended (ABORTED), as when another
 * transaction's commit on the same document landed first: `meanwhile` is that commit, run once the refused
 * transaction has been rolled back (its locks released). The client then runs the transaction again.
 */
function loseNextCommitTo(db: Firestore, meanwhile: () => Promise<void>): void {
  const client = db as unknown as { request: (method: string, ...rest: unknown[]) => Promise<unknown> };
  const send = client.request.bind(db);
  let lost = false;
  client.request = async (method, ...rest) => {
    if (method === 'commit' && !lost) {
      lost = true;
      throw Object.assign(new Error('10 ABORTED: contended'), { code: 10 });
    }
    const answer = await send(method, ...rest);
    if (lost && method === 'rollback') {
      client.request = send;
      await meanwhile();
    }
    return answer;
  };
}
