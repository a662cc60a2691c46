// Each periodic function records its runs (issue 11: the job list and the fleet page show them), and
// claims a run before doing it so that a duplicate Pub/Sub delivery of the same tick does nothing.

export interface JobRun {
  job: string;
  startedAt: Date;
  finishedAt: Date | null;
  ok: boolean | null;
  /** What the run did: probes run, proxies requeued, instances deleted … */
  counts: Record<string, number>;
  error: string | null;
  /**
   * For a job that works through a time window (probe): where the run's window started, recorded with its
   * end — for a failed run, where the first window whose results it did not store started — so that the
   * run after a failed one can take up what the failed run left. Null while running, and for the other
   * jobs.
   */
  windowStart?: Date | null;
  /**
   * For a job whose runs take up where the last one left off (requeue's drift range): where the next
   * run's window starts — this run's end, or where it began when not all of it was done. While running,
   * the last finished run's, carried over by the claim: a run that dies (crash, timeout) never records its
   * own, and the run after it must still know where the unfinished window starts. Null for the other jobs.
   */
  nextWindowStart?: Date | null;
  /**
   * For a job whose runs keep working after their start (the probe's loop, the requeue sweep's window):
   * when the run stops starting work, recorded with its claim — so the next run knows where this one's
   * coverage ends even when its own configuration (the loop) differs, as across a deploy that changed it,
   * and whether a run that never recorded its end is past it. Null for the other jobs, and on records
   * claimed before it was recorded.
   */
  deadline?: Date | null;
}

export interface JobRunStore {
  get(job: string): Promise<JobRun | null>;
  /**
   * Starts a run unless another one started less than `minGapMs` ago (then null: a duplicate delivery) —
   * with `retryAfterFailure`, unless that one recorded a failure: for a job whose every recorded failure is
   * thrown (the probe's), the delivery after one is Pub/Sub's retry (for the requeue, it takes up the
   * window a sweep that stopped early left). Returns the previous run (or null on
   * the first) so the caller can derive its window from it. With a gap (runs that are not meant to
   * overlap), a previous run that never recorded its end is named in the new run's `error` until the new
   * run finishes: a job whose every run dies must not read as always in progress. `deadline` is recorded
   * as the new run's (JobRun.deadline).
   */
  claim(
    job: string,
    now: Date,
    minGapMs: number,
    deadline?: Date,
    retryAfterFailure?: boolean,
  ): Promise<{ previous: JobRun | null } | null>;
  /**
   * Records how the run that claimed at `run.startedAt` ended — unless a later run has claimed since (runs
   * of requeue and snapshot may overlap): the record then belongs to that run and is left alone.
   */
  finish(
    job: string,
    run: Pick<
      JobRun,
      'startedAt' | 'finishedAt' | 'ok' | 'counts' | 'error' | 'windowStart' | 'nextWindowStart'
    >,
  ): Promise<void>;
  list(): Promise<JobRun[]>;
}

/** What a finished run reports (JobRun's ok / counts / error). */
export interface RunResult {
  ok: boolean;
  counts: Record<string, number>;
  error: string | null;
  nextWindowStart?: Date | null;
}

/**
 * Runs `work` as a recorded run of `job`. The record only reports: a failure to claim or finish it goes to
 * `onRecordError` and never stops or fails the work, which is then given no previous run. A failed work
 * is recorded (ok false) and rethrown. Claimed with a `minGapMs` (requeue), a delivery the claim refuses
 * as a duplicate runs nothing and gives null; without one (snapshot: a second run is harmless), every
 * delivery runs.
 */
export async function recordRun<T>(
  deps: { runs: JobRunStore; now: () => Date; onRecordError: (err: unknown) => void },
  job: string,
  work: (previous: JobRun | null) => Promise<T>,
  result: (value: T) => RunResult,
  /** The claim's gap, retryAfterFailure and deadline (JobRunStore.claim). */
  claim: { minGapMs?: number; retryAfterFailure?: boolean; deadline?: Date } = {},
): Promise<T | null> {
  let recording = false;
  let previous: JobRun | null = null;
  const startedAt = deps.now();
  const minGapMs = claim.minGapMs ?? 0;
  try {
    const claimed = await deps.runs.claim(job, startedAt, minGapMs, claim.deadline, claim.retryAfterFailure);
    // Only a claim with a gap is ever refused: another delivery of the tick is running, or just ran.
    if (claimed === null && minGapMs > 0) return null;
    recording = claimed !== null;
    previous = claimed?.previous ?? null;
  } catch (err) {
    deps.onRecordError(err);
  }
  const record = async (run: RunResult) => {
    if (!recording) return;
    try {
      await deps.runs.finish(job, { startedAt, finishedAt: deps.now(), ...run });
    } catch (err) {
      deps.onRecordError(err);
    }
  };
  let value: T;
  try {
    value = await work(previous);
  } catch (err) {
    await record({ ok: false, counts: {}, error: err instanceof Error ? err.message : String(err) });
    throw err;
  }
  await record(result(value));
  return value;
}
