import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import type { JobRun, JobRunStore } from '../../../shared/src/ports/job-runs.js';
import { recordedSweep } from './job-run.js';
import type { SweepReport } from './sweep.js';

class MemoryRuns implements JobRunStore {
  runs = new Map<string, JobRun>();
  failClaim = false;
  failFinish = false;
  async get(job: string) {
    return this.runs.get(job) ?? null;
  }
  async list() {
    return [...this.runs.values()];
  }
  async claim(job: string, now: Date, minGapMs: number, deadline?: Date, retryAfterFailure = false) {
    if (this.failClaim) throw new Error('firestore down');
    const previous = this.runs.get(job) ?? null;
    // As FirestoreJobRunStore's `blocks`.
    const within = previous && now.getTime() - previous.startedAt.getTime() < minGapMs;
    if (within && !(retryAfterFailure && previous.ok === false)) return null;
    // As FirestoreJobRunStore: the last finished run's nextWindowStart is carried while this one runs.
    const carried = previous?.nextWindowStart ?? null;
    this.runs.set(job, {
      job,
      startedAt: now,
      finishedAt: null,
      ok: null,
      counts: {},
      error: null,
      ...(carried ? { nextWindowStart: carried } : {}),
      ...(deadline ? { deadline } : {}),
    });
    return { previous };
  }
  async finish(job: string, run: Pick<JobRun, 'finishedAt' | 'ok' | 'counts' | 'error' | 'nextWindowStart'>) {
    if (this.failFinish) throw new Error('firestore down');
    this.runs.set(job, { ...this.runs.get(job)!, ...run });
  }
}

const report: SweepReport = {
  due: 3,
  drift: 2,
  publishFailures: 0,
  polls: 7,
  nextDriftFrom: new Date('2026-02-01T12:01:00Z'),
};

/** When a sweep starting now stops polling: its tick's window (a minute, less the margin). */
const windowEnd = (deps: { clock: ManualClock }) => new Date(deps.clock.now().getTime() + 59_000);

function setup() {
  const runs = new MemoryRuns();
  const clock = new ManualClock(new Date('2026-02-01T12:00:00Z'));
  const log = memoryLogger();
  const resumedAt: Array<Date | null> = [];
  const sweep =
    (r: SweepReport | Error, ms = 1500) =>
    async (resumeAt: Date | null) => {
      resumedAt.push(resumeAt);
      clock.advance(ms);
      if (r instanceof Error) throw r;
      return r;
    };
  return { runs, clock, log, deps: { runs, clock, log, tickPeriodMs: 60_000 }, sweep, resumedAt };
}

describe('recordedSweep', () => {
  it('records start, end, counts and its window’s end (deadline) under requeue-sweep', async () => {
    const { runs, deps, sweep } = setup();
    await expect(recordedSweep(deps, windowEnd(deps), sweep(report))).resolves.toBe(report);
    expect(runs.runs.get('requeue-sweep')).toEqual({
      job: 'requeue-sweep',
      startedAt: new Date('2026-02-01T12:00:00Z'),
      finishedAt: new Date('2026-02-01T12:00:01.500Z'),
      ok: true,
      counts: { proxiesRequeued: 5, due: 3, drift: 2, publishFailures: 0, polls: 7 },
      error: null,
      nextWindowStart: new Date('2026-02-01T12:01:00Z'),
      deadline: new Date('2026-02-01T12:00:59Z'),
    });
  });

  it("hands the next sweep the drift range's end the last finished run recorded, whichever instance ran it", async () => {
    const { deps, sweep, resumedAt, runs, clock } = setup();
    await recordedSweep(deps, windowEnd(deps), sweep(report));
    clock.set(new Date('2026-02-01T12:01:00Z'));
    await recordedSweep(
      deps,
      windowEnd(deps),
      sweep({ ...report, nextDriftFrom: new Date('2026-02-01T12:02:00Z') }),
    );
    expect(resumedAt).toEqual([null, new Date('2026-02-01T12:01:00Z')]);
    // A record claimed before runs recorded their deadline says nothing of a run that never finished.
    runs.runs.set('requeue-sweep', { ...runs.runs.get('requeue-sweep')!, finishedAt: null, deadline: null });
    clock.set(new Date('2026-02-01T12:02:00Z'));
    await recordedSweep(deps, windowEnd(deps), sweep(report));
    expect(resumedAt[2]).toBeNull();
  });

  // The claim overwrote the last finished run's nextWindowStart: a sweep that died mid-window (a crash, the
  // function's timeout) left the next sweep nowhere to start but its own tick, and the drift slots the dead
  // run had not published yet were nobody's.
  it.each([
    [
      'past its window: it died, and the range is taken up where the last finished run left it',
      '12:02:00',
      '12:01:00',
    ],
    ['still within its window: the range is its own', '12:01:40', null],
  ])('a sweep that never recorded its end, the next one starting %s', async (_, nextAt, resumed) => {
    const { deps, sweep, resumedAt, runs, clock } = setup();
    await recordedSweep(deps, windowEnd(deps), sweep(report)); // the next range starts at 12:01
    clock.set(new Date('2026-02-01T12:01:00Z'));
    void recordedSweep(deps, windowEnd(deps), () => new Promise<SweepReport>(() => {})); // dies
    await new Promise((r) => setImmediate(r));
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ startedAt: clock.now(), finishedAt: null });
    clock.set(new Date(`2026-02-01T${nextAt}Z`));
    await recordedSweep(deps, windowEnd(deps), sweep(report));
    expect(resumedAt[1]).toEqual(resumed === null ? null : new Date(`2026-02-01T${resumed}Z`));
  });

  it('a sweep that stopped early is a failed run and a failed tick, recorded with where its range began', async () => {
    const { runs, deps, sweep, log } = setup();
    const from = new Date('2026-02-01T11:59:30Z');
    await recordedSweep(
      deps,
      windowEnd(deps),
      sweep({ ...report, publishFailures: 1, failure: new Error('listDue failed'), nextDriftFrom: from }),
    );
    const error = 'sweep stopped: listDue failed; 1 publish(es) failed';
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ ok: false, error, nextWindowStart: from });
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([
      expect.objectContaining({ severity: 'ERROR', job: 'requeue-sweep', error }),
    ]);
  });

  // A tick delivered twice (Pub/Sub is at least once) was swept twice: every due proxy and drift slot of
  // its minute published twice. The claim with a gap is what two copies on two instances share; the
  // emulator-backed test (test/integration/requeue-duplicate-tick.test.ts) delivers both at once.
  it('sweeps a second delivery within half a period not at all; the next tick, and one after a failed sweep, it does', async () => {
    const { runs, deps, sweep, clock, resumedAt, log } = setup();
    await recordedSweep(deps, windowEnd(deps), sweep(report));
    clock.set(new Date('2026-02-01T12:00:20Z'));
    await expect(recordedSweep(deps, windowEnd(deps), sweep({ ...report, due: 9 }))).resolves.toBeNull();
    expect(resumedAt).toHaveLength(1);
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ startedAt: new Date('2026-02-01T12:00:00Z') });
    expect(log.lines.map((l) => l.message)).toContain(
      'requeue tick skipped: a sweep started moments ago (duplicate delivery)',
    );
    clock.set(new Date('2026-02-01T12:01:00Z')); // the next tick
    await recordedSweep(deps, windowEnd(deps), sweep({ ...report, failure: new Error('listDue failed') }, 0));
    clock.set(new Date('2026-02-01T12:01:05Z')); // a copy of it, after the sweep stopped early
    await recordedSweep(deps, windowEnd(deps), sweep({ ...report, due: 9 }));
    expect(resumedAt).toHaveLength(3);
    expect(runs.runs.get('requeue-sweep')?.counts.due).toBe(9);
  });

  it('marks a sweep with failed publishes as not ok', async () => {
    const { runs, deps, sweep } = setup();
    await recordedSweep(deps, windowEnd(deps), sweep({ ...report, publishFailures: 2 }));
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ ok: false, error: '2 publish(es) failed' });
  });

  it('a sweep whose publishes failed is a failed tick (job.tick_failed, which failing_jobs counts); one without is not', async () => {
    const { deps, sweep, log, clock } = setup();
    await recordedSweep(deps, windowEnd(deps), sweep(report));
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([]);
    clock.set(new Date('2026-02-01T12:01:00Z'));
    await recordedSweep(deps, windowEnd(deps), sweep({ ...report, publishFailures: 2 }));
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([
      expect.objectContaining({ severity: 'ERROR', job: 'requeue-sweep', error: '2 publish(es) failed' }),
    ]);
  });

  it('records a failed sweep and rethrows', async () => {
    const { runs, deps, sweep } = setup();
    await expect(recordedSweep(deps, windowEnd(deps), sweep(new Error('listDue failed')))).rejects.toThrow(
      'listDue failed',
    );
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ ok: false, error: 'listDue failed' });
  });

  it.each(['failClaim', 'failFinish'] as const)('still sweeps when recording fails (%s)', async (flag) => {
    const { runs, deps, sweep, log } = setup();
    runs[flag] = true;
    await expect(recordedSweep(deps, windowEnd(deps), sweep(report))).resolves.toBe(report);
    expect(log.lines.some((l) => l.severity === 'WARNING')).toBe(true);
  });
});
