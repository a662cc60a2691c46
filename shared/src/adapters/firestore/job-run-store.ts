// JobRunStore on Firestore: `jobRuns/{job}`, one small document per periodic job.
import { randomUUID } from 'node:crypto';
import { type DocumentData, type Firestore, Timestamp } from '@google-cloud/firestore';
import { claimRefused, type JobRun, type JobRunStore } from '../../ports/job-runs.js';
import { Collections } from './collections.js';

export class FirestoreJobRunStore implements JobRunStore {
  constructor(private readonly db: Firestore) {}

  private ref(job: string) {
    return this.db.collection(Collections.jobRuns).doc(job);
  }

  async get(job: string): Promise<JobRun | null> {
    const snap = await this.ref(job).get();
    return snap.exists ? fromDoc(job, snap.data()!) : null;
  }

  async claim(
    job: string,
    now: Date,
    minGapMs: number,
    deadline?: Date,
    retryAfterFailure = false,
    tick?: string,
  ): Promise<{ previous: JobRun | null } | null> {
    // The claim the last attempt staged: runTransaction runs the function again after a commit that landed
    // and then failed (UNAVAILABLE, DEADLINE_EXCEEDED), and that attempt reads this claim's own record.
    // Within the gap it took its own run for a duplicate delivery (the probe probed nothing and left the
    // record "in progress"); without one it handed on its own record as the previous run. Known by an id
    // of its own, not by its start time: a duplicate delivery of the tick claiming in the same millisecond
    // — whose commit beat this one's, so this attempt is a retry — would read as this claim, and both runs
    // would go on (the probe counting each due proxy's probe twice).
    let staged: { previous: JobRun | null } | null = null;
    const claimId = randomUUID();
    return this.db.runTransaction(
      async (tx) => {
        const snap = await tx.get(this.ref(job));
        const previous = snap.exists ? fromDoc(job, snap.data()!) : null;
        if (staged && snap.get('claimId') === claimId) return staged;
        // The probe throws every failure it records: such a tick is redelivered by Pub/Sub — ~10 s on, within
        // its gap of half its 60 s period — and that delivery is the retry, not a duplicate (refused, the
        // tick's work waited for the next tick, contrary to what a thrown tick promises). A requeue sweep
        // recorded failed may have stopped early, leaving its window to another delivery of its tick. (gc
        // records the failures it expects and acknowledges them: a delivery after one is a duplicate.)
        if (previous && claimRefused(previous, now, { minGapMs, retryAfterFailure, tick })) return null;
        staged = { previous };
        tx.set(this.ref(job), {
          job,
          startedAt: Timestamp.fromDate(now),
          finishedAt: null,
          ok: null,
          counts: previous?.counts ?? {},
          error: unfinishedNote(previous, now, minGapMs, tick),
          windowStart: null,
          // The last finished run's, carried while this one runs: if it dies, the run after it still knows
          // where the window this one left unfinished starts (requeue's drift range).
          nextWindowStart: previous?.nextWindowStart ? Timestamp.fromDate(previous.nextWindowStart) : null,
          deadline: deadline ? Timestamp.fromDate(deadline) : null,
          tick: tick ?? null,
          claimId,
        });
        return staged;
      },
      { maxAttempts: 3 },
    );
  }

  async finish(
    job: string,
    run: Pick<
      JobRun,
      'startedAt' | 'finishedAt' | 'ok' | 'counts' | 'error' | 'windowStart' | 'nextWindowStart'
    >,
  ): Promise<void> {
    await this.db.runTransaction(
      async (tx) => {
        const snap = await tx.get(this.ref(job));
        // A later run claimed the record (overlapping runs): its start time is there, not ours.
        if (!snap.exists || date(snap.get('startedAt'))?.getTime() !== run.startedAt.getTime()) return;
        tx.update(this.ref(job), {
          finishedAt: run.finishedAt ? Timestamp.fromDate(run.finishedAt) : null,
          ok: run.ok,
          counts: run.counts,
          error: run.error,
          windowStart: run.windowStart ? Timestamp.fromDate(run.windowStart) : null,
          // Not given (a requeue sweep that threw knows none of its own): what the claim carried stays. Written
          // null, the next sweep had nowhere to take the drift range up but its own tick.
          ...(run.nextWindowStart === undefined
            ? {}
            : { nextWindowStart: run.nextWindowStart ? Timestamp.fromDate(run.nextWindowStart) : null }),
        });
      },
      { maxAttempts: 3 },
    );
  }

  async list(): Promise<JobRun[]> {
    const snap = await this.db.collection(Collections.jobRuns).get();
    return snap.docs.map((d) => fromDoc(d.id, d.data()));
  }
}

/**
 * A run that died (crash, function timeout) never records its end, and the next claim overwrites its
 * record: without this note a job whose every run dies would only ever read "in progress". Said while the
 * new run is in progress (its own end replaces it). Only for jobs whose runs are not meant to overlap:
 * those claimed with a gap (gc, probe), and those claimed with their tick (requeue) once the unfinished run
 * is past its deadline — a run-now tick's sweep still runs when the next scheduled tick's starts. Snapshot's may
 * overlap, so an unfinished predecessor means nothing.
 */
function unfinishedNote(
  previous: JobRun | null,
  now: Date,
  minGapMs: number,
  tick: string | undefined,
): string | null {
  if (!previous || previous.finishedAt !== null) return null;
  const pastDeadline = !previous.deadline || previous.deadline.getTime() <= now.getTime();
  if (!(minGapMs > 0 || (tick !== undefined && pastDeadline))) return null;
  return `the previous run, started ${previous.startedAt.toISOString()}, never recorded its end: it crashed, timed out, or is still running`;
}

const date = (v: unknown): Date | null => (v instanceof Timestamp ? v.toDate() : null);

function fromDoc(job: string, d: DocumentData): JobRun {
  return {
    job,
    startedAt: date(d.startedAt) ?? new Date(0),
    finishedAt: date(d.finishedAt),
    ok: typeof d.ok === 'boolean' ? d.ok : null,
    counts: (d.counts ?? {}) as Record<string, number>,
    error: typeof d.error === 'string' ? d.error : null,
    windowStart: date(d.windowStart),
    nextWindowStart: date(d.nextWindowStart),
    deadline: date(d.deadline),
    tick: typeof d.tick === 'string' ? d.tick : null,
  };
}
