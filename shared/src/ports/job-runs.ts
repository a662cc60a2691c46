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
}

export interface JobRunStore {
  get(job: string): Promise<JobRun | null>;
  /**
   * Starts a run unless another one started less than `minGapMs` ago (then null). Returns the previous
   * run (or null on the first) so the caller can derive its window from it.
   */
  claim(job: string, now: Date, minGapMs: number): Promise<{ previous: JobRun | null } | null>;
  finish(job: string, run: Pick<JobRun, 'finishedAt' | 'ok' | 'counts' | 'error'>): Promise<void>;
  list(): Promise<JobRun[]>;
}
