// The local stand-in for Cloud Scheduler (recipes §5: there is no emulator): each job publishes its
// Pub/Sub target's data and attributes to its topic every `everySeconds / speed`, and can be fired once,
// paused and resumed. It keeps the per-job fields Cloud Scheduler reports (state, lastAttemptTime,
// status, scheduleTime) so server.ts can serve the Cloud Scheduler REST subset from it.
import { type Clock, systemClock } from '../../shared/src/ports/clock.js';
import { SchedulerError } from './errors.js';
import type { JobView, SchedulerJob } from './jobs.js';

/** What the scheduler needs of a publisher (PubSubPublisher satisfies it). */
export interface TickPublisher {
  publishRaw(topic: string, data: Buffer, attributes: Record<string, string>): Promise<string>;
}

export interface LocalSchedulerOptions {
  clock?: Clock;
  /** Multiplies every job's cadence: 2 fires twice as often. Default 1. */
  speed?: number;
  /** Called when a timed or `run` attempt fails (the loop itself never throws). */
  onError?: (jobId: string, err: unknown) => void;
}

interface Entry {
  job: SchedulerJob;
  view: JobView;
  timer?: NodeJS.Timeout;
}

const UNAVAILABLE = 14; // google.rpc.Code

export class LocalScheduler {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly clock: Clock;
  private readonly speed: number;
  private running = false;
  /** Set once `stop` begins: no attempt starts after it; those already out are waited for. */
  private stopped = false;

  constructor(
    jobs: SchedulerJob[],
    private readonly publisher: TickPublisher,
    private readonly opts: LocalSchedulerOptions = {},
  ) {
    this.clock = opts.clock ?? systemClock;
    this.speed = opts.speed ?? 1;
    // Infinity would make every period 0: ticks published non-stop on 1 ms timers.
    if (!(this.speed > 0 && Number.isFinite(this.speed))) {
      throw new RangeError(`speed must be a finite number > 0, got ${opts.speed}`);
    }
    for (const job of jobs) {
      this.entries.set(job.id, { job, view: { ...job, state: 'ENABLED', userUpdateTime: this.clock.now() } });
    }
  }

  list(): JobView[] {
    return [...this.entries.values()].map((e) => ({ ...e.view }));
  }

  get(id: string): JobView {
    return { ...this.entry(id).view };
  }

  /**
   * Publishes the job's tick once, now; returns the message id. A paused job is refused. Its caller awaits
   * the publish, so it may fire after `stop` too (the plane's tests fire jobs with the loop stopped).
   */
  fire(id: string): Promise<string> {
    try {
      return this.track(this.attempt(this.runnable(id)));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Cloud Scheduler's RunJob: answers with the job as it stood before this run — the previous attempt's
   * `lastAttemptTime` with that attempt's `lastStatus` — and publishes the tick in the background, as a
   * timed attempt is: its time and outcome show in the job once it is over (`get`), a failure goes to
   * `onError`, and `stop` waits for it. Awaiting the publish made the answer as slow as Pub/Sub, past a
   * caller's deadline; an answer with this attempt's time but the previous status read as this run's
   * outcome (OK when there was none). A paused or unknown job is refused at once, and every job once
   * `stop` has begun: nobody awaits this publish but `stop`.
   */
  run(id: string): JobView {
    if (this.stopped) throw new SchedulerError('unavailable', 'the scheduler is stopping; no job is run');
    const entry = this.runnable(id);
    const before = { ...entry.view };
    this.track(this.attempt(entry)).catch((err) => this.opts.onError?.(entry.job.id, err));
    return before;
  }

  // Cloud Scheduler documents both as state transitions: "A job must be in Job.State.ENABLED to be
  // paused" and "in Job.State.PAUSED to be resumed" (FAILED_PRECONDITION otherwise), so callers that want
  // idempotence (shared/src/adapters/scheduler) must handle the refusal here as on GCP.
  pause(id: string): JobView {
    const entry = this.entry(id);
    if (entry.view.state !== 'ENABLED') {
      throw new SchedulerError('failed_precondition', `job ${id} is ${entry.view.state}, not ENABLED`);
    }
    entry.view.state = 'PAUSED';
    entry.view.userUpdateTime = this.clock.now();
    this.unschedule(entry);
    return this.get(id);
  }

  resume(id: string): JobView {
    const entry = this.entry(id);
    if (entry.view.state !== 'PAUSED') {
      throw new SchedulerError('failed_precondition', `job ${id} is ${entry.view.state}, not PAUSED`);
    }
    entry.view.state = 'ENABLED';
    entry.view.userUpdateTime = this.clock.now();
    if (this.running) this.schedule(entry);
    return this.get(id);
  }

  /** Starts the timed loop of every enabled job. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopped = false;
    for (const entry of this.entries.values()) if (entry.view.state === 'ENABLED') this.schedule(entry);
  }

  /**
   * Stops the loop, refuses `run` from now on (until `start`), and waits until no attempt is in
   * flight. The local plane stops the scheduler before its HTTP server: a `:run` taken in between
   * published untracked, on a Pub/Sub client the plane then closed.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    for (const entry of this.entries.values()) this.unschedule(entry);
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private entry(id: string): Entry {
    const entry = this.entries.get(id);
    if (!entry) throw new SchedulerError('not_found', `job ${id} not found`);
    return entry;
  }

  private runnable(id: string): Entry {
    const entry = this.entry(id);
    if (entry.view.state === 'PAUSED') throw new SchedulerError('failed_precondition', `job ${id} is paused`);
    return entry;
  }

  /**
   * Publishes the tick and records the attempt — its start time and its status together, once it is
   * over. Setting the time first paired it with the previous attempt's status until the publish ended,
   * and an API reads "attempted, no status" as OK. An attempt that ends after a later one was recorded
   * leaves that one in place.
   */
  private async attempt(entry: Entry): Promise<string> {
    const startedAt = this.clock.now();
    const record = (status: JobView['lastStatus']) => {
      const last = entry.view.lastAttemptTime;
      if (last && last.getTime() > startedAt.getTime()) return;
      entry.view.lastAttemptTime = startedAt;
      entry.view.lastStatus = status;
    };
    try {
      const id = await this.publisher.publishRaw(entry.job.topic, entry.job.data, entry.job.attributes);
      record({ code: 0 });
      return id;
    } catch (err) {
      record({ code: UNAVAILABLE, message: err instanceof Error ? err.message : String(err) });
      throw err;
    }
  }

  /**
   * Arms the job's next tick. Ticks keep to one grid, as a cron schedule does: each is due one period
   * after the one before it was due, not after it fired (timers fire late, and re-arming from the firing
   * moment let the lateness add up). Slots already past — a stalled event loop, a suspended laptop — are
   * skipped, not fired in a burst; Cloud Scheduler does not catch up missed runs either. A clock stepped
   * back (the grid is on the wall clock, as cron is) starts the grid again from now, rather than wait out
   * the step. `after`: when the tick that fired was due, in ms (a fractional period stays exact).
   */
  private schedule(entry: Entry, after?: number): void {
    this.unschedule(entry);
    const periodMs = (entry.job.everySeconds * 1000) / this.speed;
    const now = this.clock.now().getTime();
    let due = (after ?? now) + periodMs;
    if (due < now) due += Math.ceil((now - due) / periodMs) * periodMs;
    else if (due - now > periodMs) due = now + periodMs;
    entry.view.scheduleTime = new Date(due);
    entry.timer = setTimeout(() => {
      if (!this.running || entry.view.state !== 'ENABLED') return;
      this.schedule(entry, due);
      this.track(this.attempt(entry)).catch((err) => this.opts.onError?.(entry.job.id, err));
    }, due - now);
  }

  private unschedule(entry: Entry): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.view.scheduleTime = undefined;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    p.then(
      () => this.inFlight.delete(p),
      () => this.inFlight.delete(p),
    );
    return p;
  }
}
