// JobRunStore on Firestore: `jobRuns/{job}`, one small document per periodic job.
import { type DocumentData, type Firestore, Timestamp } from '@google-cloud/firestore';
import type { JobRun, JobRunStore } from '../../ports/job-runs.js';
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

  async claim(job: string, now: Date, minGapMs: number): Promise<{ previous: JobRun | null } | null> {
    return this.db.runTransaction(
      async (tx) => {
        const snap = await tx.get(this.ref(job));
        const previous = snap.exists ? fromDoc(job, snap.data()!) : null;
        if (previous && now.getTime() - previous.startedAt.getTime() < minGapMs) return null;
        tx.set(this.ref(job), {
          job,
          startedAt: Timestamp.fromDate(now),
          finishedAt: null,
          ok: null,
          counts: previous?.counts ?? {},
          error: null,
          previousStartedAt: previous ? Timestamp.fromDate(previous.startedAt) : null,
        });
        return { previous };
      },
      { maxAttempts: 3 },
    );
  }

  async finish(
    job: string,
    run: Pick<JobRun, 'startedAt' | 'finishedAt' | 'ok' | 'counts' | 'error'>,
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

const date = (v: unknown): Date | null => (v instanceof Timestamp ? v.toDate() : null);

function fromDoc(job: string, d: DocumentData): JobRun {
  return {
    job,
    startedAt: date(d.startedAt) ?? new Date(0),
    finishedAt: date(d.finishedAt),
    ok: typeof d.ok === 'boolean' ? d.ok : null,
    counts: (d.counts ?? {}) as Record<string, number>,
    error: typeof d.error === 'string' ? d.error : null,
  };
}
