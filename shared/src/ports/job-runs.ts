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
   * own, and the run after it must still know where the unfinished window starts — as a run that failed
   * without knowing its own (it threw) keeps it. The probe's: where the slots a spent budget left start.
   * Null for the other jobs.
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
  /**
   * For a job whose claim names the tick it runs (requeue: the tick message's Pub/Sub publish time, else
   * its message id — the same on every delivery of it): that tick, recorded with the claim. Another
   * delivery of it is the duplicate (claimRefused). Null for the other jobs.
   */
  tick?: string | null;
}

export interface JobRunStore {
  get(job: string): Promise<JobRun | null>;
  /**
   * Starts a run unless it is a duplicate delivery of a run already claimed (then null; claimRefused):
   * one that started less than `minGapMs` ago — or, claimed with `tick`, one claimed for the same tick,
   * however long ago, and never one of another tick however soon. With `retryAfterFailure` a run that
   * recorded a failure does not refuse: for a job whose every recorded failure is thrown (the probe's), the
   * delivery after one is Pub/Sub's retry (for the requeue, it takes up the window a sweep that stopped
   * early left). Returns the previous run (or null on the first) so the caller can derive its window from
   * it. With a gap or a tick (runs that are not meant to overlap), a previous run that never recorded its
   * end is named in the new run's `error` until the new run finishes — for a tick, once that run is past
   * its deadline: a job whose every run dies must not read as always in progress. `deadline` and `tick`
   * are recorded as the new run's (JobRun.deadline, JobRun.tick).
   */
  claim(
    job: string,
    now: Date,
    minGapMs: number,
    deadline?: Date,
    retryAfterFailure?: boolean,
    tick?: string,
  ): Promise<{ previous: JobRun | null } | null>;
  /**
   * Records how the run that claimed at `run.startedAt` ended — unless a later run has claimed since (runs
   * of requeue and snapshot may overlap): the record then belongs to that run and is left alone. A run that
   * gives no `nextWindowStart` (undefined, not null: a requeue sweep that threw) leaves the one its claim
   * carried, so the next run still takes the window up where the last run that knew it left it.
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

/**
 * Whether `previous` makes a claim at `now` a duplicate delivery (JobRunStore.claim). By time — it started
 * within `minGapMs` — or, for a claim that names its tick, by that tick: a gap measured from the claims
 * took a late tick (delivered 31 s after its minute: a cold start, a push retry's backoff) and the next
 * on-time one, claimed 29.5 s later, for two deliveries of one tick, and nothing swept the next minute.
 * Ticks named by their publish time are ordered: a copy of a tick older than the one claimed last is
 * refused too (one record per job holds only the last tick; a late copy of the tick before it swept its
 * slots again and took the record over). With `retryAfterFailure`, a run of the same tick that recorded a
 * failure refuses nothing.
 */
export function claimRefused(
  previous: JobRun,
  now: Date,
  claim: { minGapMs: number; retryAfterFailure?: boolean; tick?: string },
): boolean {
  if (claim.tick === undefined) {
    const duplicate = now.getTime() - previous.startedAt.getTime() < claim.minGapMs;
    return duplicate && !(claim.retryAfterFailure && previous.ok === false);
  }
  const [last, next] = [Date.parse(previous.tick ?? ''), Date.parse(claim.tick)];
  if (!Number.isNaN(last) && !Number.isNaN(next) && next < last) return true;
  return previous.tick === claim.tick && !(claim.retryAfterFailure && previous.ok === false);
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
 * is recorded (ok false) and rethrown. Claimed with a `minGapMs` or a `tick` (requeue), a delivery the claim
 * refuses as a duplicate runs nothing and gives null; without (snapshot: a second run is harmless), every
 * delivery runs.
 */
export async function recordRun<T>(
  deps: { runs: JobRunStore; now: () => Date; onRecordError: (err: unknown) => void },
  job: string,
  work: (previous: JobRun | null) => Promise<T>,
  result: (value: T) => RunResult,
  /** The claim's gap, retryAfterFailure, deadline and tick (JobRunStore.claim). */
  claim: { minGapMs?: number; retryAfterFailure?: boolean; deadline?: Date; tick?: string } = {},
): Promise<T | null> {
  let recording = false;
  let previous: JobRun | null = null;
  const startedAt = deps.now();
  const minGapMs = claim.minGapMs ?? 0;
  try {
    const claimed = await deps.runs.claim(
      job,
      startedAt,
      minGapMs,
      claim.deadline,
      claim.retryAfterFailure,
      claim.tick,
    );
    // Only a claim with a gap or a tick is ever refused: another delivery of the tick is running, or ran.
    if (claimed === null && (minGapMs > 0 || claim.tick !== undefined)) return null;
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
    // No nextWindowStart: the one the claim carried stays (JobRunStore.finish).
    await record({ ok: false, counts: {}, error: err instanceof Error ? err.message : String(err) });
    throw err;
  }
  await record(result(value));
  return value;
}
