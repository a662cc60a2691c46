import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLAIM_TIMEOUT_MS, RECORD_MARGIN_MS } from '../../../shared/src/adapters/bounded-job-runs.js';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { claimRefused, type JobRun, type JobRunStore } from '../../../shared/src/ports/job-runs.js';
import { recordedSweep } from './job-run.js';
import type { SweepReport } from './sweep.js';

/**
 * jobRuns in memory, written as FirestoreJobRunStore writes them: a claim replaces the record (carrying the
 * counts and nextWindowStart of the run before), and a finish lands only on its own run's record, replacing
 * its fields — a nextWindowStart not given keeps what the claim carried. (It merged whatever the finish
 * gave into whatever record was there: a thrown sweep kept the carried value here while the store wrote
 * null over it, and a late finish stamped itself on a later run.)
 */
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
  async claim(
    job: string,
    now: Date,
    minGapMs: number,
    deadline?: Date,
    retryAfterFailure = false,
    tick?: string,
  ) {
    if (this.failClaim) throw new Error('firestore down');
    const previous = this.runs.get(job) ?? null;
    if (previous && claimRefused(previous, now, { minGapMs, retryAfterFailure, tick })) return null;
    this.runs.set(job, {
      job,
      startedAt: now,
      finishedAt: null,
      ok: null,
      counts: previous?.counts ?? {},
      error: null,
      windowStart: null,
      nextWindowStart: previous?.nextWindowStart ?? null,
      deadline: deadline ?? null,
      tick: tick ?? null,
    });
    return { previous };
  }
  async finish(
    job: string,
    run: Pick<
      JobRun,
      'startedAt' | 'finishedAt' | 'ok' | 'counts' | 'error' | 'windowStart' | 'nextWindowStart'
    >,
  ) {
    if (this.failFinish) throw new Error('firestore down');
    const current = this.runs.get(job);
    if (!current || current.startedAt.getTime() !== run.startedAt.getTime()) return;
    this.runs.set(job, {
      ...current,
      finishedAt: run.finishedAt,
      ok: run.ok,
      counts: run.counts,
      error: run.error,
      windowStart: run.windowStart ?? null,
      nextWindowStart:
        run.nextWindowStart === undefined ? (current.nextWindowStart ?? null) : run.nextWindowStart,
    });
  }
}

const report: SweepReport = {
  due: 3,
  drift: 2,
  publishFailures: 0,
  polls: 7,
  nextDriftFrom: new Date('2026-02-01T12:01:00Z'),
};

/**
 * The tick published now, delivered at once (`late`: that much later): its identity (its publish time) and
 * when its sweep stops polling, its window's end (a minute, less the margin).
 */
const onTick = (deps: { clock: ManualClock }, lateMs = 0) => {
  const at = deps.clock.now().getTime() - lateMs;
  return { tick: new Date(at).toISOString(), deadline: new Date(at + 59_000) };
};

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
  return { runs, clock, log, deps: { runs, clock, log }, sweep, resumedAt };
}

describe('recordedSweep', () => {
  it('records start, end, counts, its tick and its window’s end (deadline) under requeue-sweep', async () => {
    const { runs, deps, sweep } = setup();
    await expect(recordedSweep(deps, onTick(deps), sweep(report))).resolves.toBe(report);
    expect(runs.runs.get('requeue-sweep')).toEqual({
      job: 'requeue-sweep',
      startedAt: new Date('2026-02-01T12:00:00Z'),
      finishedAt: new Date('2026-02-01T12:00:01.500Z'),
      ok: true,
      counts: { proxiesRequeued: 5, due: 3, drift: 2, publishFailures: 0, polls: 7 },
      error: null,
      nextWindowStart: new Date('2026-02-01T12:01:00Z'),
      windowStart: null,
      deadline: new Date('2026-02-01T12:00:59Z'),
      tick: '2026-02-01T12:00:00.000Z',
    });
  });

  it("hands the next sweep the drift range's end the last finished run recorded, whichever instance ran it", async () => {
    const { deps, sweep, resumedAt, runs, clock } = setup();
    await recordedSweep(deps, onTick(deps), sweep(report));
    clock.set(new Date('2026-02-01T12:01:00Z'));
    await recordedSweep(
      deps,
      onTick(deps),
      sweep({ ...report, nextDriftFrom: new Date('2026-02-01T12:02:00Z') }),
    );
    expect(resumedAt).toEqual([null, new Date('2026-02-01T12:01:00Z')]);
    // A record claimed before runs recorded their deadline says nothing of a run that never finished.
    runs.runs.set('requeue-sweep', { ...runs.runs.get('requeue-sweep')!, finishedAt: null, deadline: null });
    clock.set(new Date('2026-02-01T12:02:00Z'));
    await recordedSweep(deps, onTick(deps), sweep(report));
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
    await recordedSweep(deps, onTick(deps), sweep(report)); // the next range starts at 12:01
    clock.set(new Date('2026-02-01T12:01:00Z'));
    void recordedSweep(deps, onTick(deps), () => new Promise<SweepReport>(() => {})); // dies
    await new Promise((r) => setImmediate(r));
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ startedAt: clock.now(), finishedAt: null });
    clock.set(new Date(`2026-02-01T${nextAt}Z`));
    await recordedSweep(deps, onTick(deps), sweep(report));
    expect(resumedAt[1]).toEqual(resumed === null ? null : new Date(`2026-02-01T${resumed}Z`));
  });

  it('a sweep that stopped early is a failed run and a failed tick, recorded with where its range began', async () => {
    const { runs, deps, sweep, log } = setup();
    const from = new Date('2026-02-01T11:59:30Z');
    await recordedSweep(
      deps,
      onTick(deps),
      sweep({ ...report, publishFailures: 1, failure: new Error('listDue failed'), nextDriftFrom: from }),
    );
    const error = 'sweep stopped: listDue failed; 1 publish(es) failed';
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ ok: false, error, nextWindowStart: from });
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([
      expect.objectContaining({ severity: 'ERROR', job: 'requeue-sweep', error }),
    ]);
  });

  // A tick delivered twice (Pub/Sub is at least once) was swept twice: every due proxy and drift slot of
  // its minute published twice. The claim naming the tick is what two copies on two instances share; the
  // emulator-backed test (test/integration/requeue-duplicate-tick.test.ts) delivers both at once.
  it('sweeps a second delivery of a tick not at all while its sweep runs or once it ended ok; after a failed sweep it does', async () => {
    const { runs, deps, sweep, clock, resumedAt, log } = setup();
    const first = onTick(deps);
    let end!: (r: SweepReport) => void;
    const running = recordedSweep(deps, first, (at) => {
      resumedAt.push(at);
      return new Promise<SweepReport>((resolve) => {
        end = resolve;
      });
    });
    await new Promise((r) => setImmediate(r));
    clock.set(new Date('2026-02-01T12:00:20Z')); // a copy, while the first sweeps
    await expect(recordedSweep(deps, first, sweep({ ...report, due: 9 }))).resolves.toBeNull();
    end(report);
    await running;
    clock.set(new Date('2026-02-01T12:00:58Z')); // a copy, after the first ended ok
    await expect(recordedSweep(deps, first, sweep({ ...report, due: 9 }))).resolves.toBeNull();
    expect(resumedAt).toHaveLength(1);
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ startedAt: new Date('2026-02-01T12:00:00Z') });
    expect(log.lines.map((l) => l.message)).toContain(
      'requeue tick skipped: another delivery of it is sweeping or swept it (duplicate delivery)',
    );
    clock.set(new Date('2026-02-01T12:01:00Z')); // the next tick
    const next = onTick(deps);
    await recordedSweep(deps, next, sweep({ ...report, failure: new Error('listDue failed') }, 0));
    clock.set(new Date('2026-02-01T12:01:05Z')); // a copy of it, after the sweep stopped early
    await recordedSweep(deps, next, sweep({ ...report, due: 9 }));
    expect(resumedAt).toHaveLength(3);
    expect(runs.runs.get('requeue-sweep')?.counts.due).toBe(9);
  });

  // The claim refused a delivery within half a period of the last claim: a tick delivered 31 s late (a
  // cold start, a push retry's backoff) took the next on-time tick, claimed 29.5 s after it, for its
  // duplicate, and nothing polled the next minute — Provisioning polls and backoffs up to a minute late.
  it('a late tick and the on-time tick after it are both swept, however close their deliveries', async () => {
    const { runs, deps, sweep, clock, resumedAt } = setup();
    clock.set(new Date('2026-02-01T12:00:31Z')); // the 12:00 tick, delivered 31 s late
    const late = onTick(deps, 31_000);
    await expect(recordedSweep(deps, late, sweep(report, 28_000))).resolves.toBe(report);
    clock.set(new Date('2026-02-01T12:01:00.500Z')); // the 12:01 tick, on time
    const onTime = onTick(deps, 500);
    await expect(recordedSweep(deps, onTime, sweep({ ...report, due: 9 }))).resolves.not.toBeNull();
    expect(resumedAt).toHaveLength(2);
    expect(runs.runs.get('requeue-sweep')).toMatchObject({
      startedAt: new Date('2026-02-01T12:01:00.500Z'),
      tick: '2026-02-01T12:01:00.000Z',
      counts: { due: 9 },
    });
  });

  // Only the last claim's tick was compared: a copy of the 12:00 tick delivered once the 12:01 tick had
  // claimed swept again (its slots published twice), and its claim took the record over from 12:01's.
  it('a copy of an older tick, delivered once a later tick has claimed, is a duplicate', async () => {
    const { runs, deps, sweep, clock } = setup();
    const first = onTick(deps);
    await recordedSweep(deps, first, sweep(report));
    clock.set(new Date('2026-02-01T12:01:00Z'));
    void recordedSweep(deps, onTick(deps), () => new Promise<SweepReport>(() => {})); // still sweeping
    await new Promise((r) => setImmediate(r));
    clock.set(new Date('2026-02-01T12:01:10Z'));
    await expect(recordedSweep(deps, first, sweep(report))).resolves.toBeNull();
    expect(runs.runs.get('requeue-sweep')).toMatchObject({
      tick: '2026-02-01T12:01:00.000Z',
      finishedAt: null,
    });
  });

  it('marks a sweep with failed publishes as not ok', async () => {
    const { runs, deps, sweep } = setup();
    await recordedSweep(deps, onTick(deps), sweep({ ...report, publishFailures: 2 }));
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ ok: false, error: '2 publish(es) failed' });
  });

  it('a sweep whose publishes failed is a failed tick (job.tick_failed, which failing_jobs counts); one without is not', async () => {
    const { deps, sweep, log, clock } = setup();
    await recordedSweep(deps, onTick(deps), sweep(report));
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([]);
    clock.set(new Date('2026-02-01T12:01:00Z'));
    await recordedSweep(deps, onTick(deps), sweep({ ...report, publishFailures: 2 }));
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([
      expect.objectContaining({ severity: 'ERROR', job: 'requeue-sweep', error: '2 publish(es) failed' }),
    ]);
  });

  // recordRun records a thrown sweep with no nextWindowStart, and the store wrote null over the one the
  // claim carried: the next sweep started its drift range at its own tick, and the slots between the last
  // finished run's end and that tick were nobody's.
  it('a sweep that throws leaves the next one the drift range’s start its claim carried', async () => {
    const { deps, sweep, resumedAt, runs, clock } = setup();
    await recordedSweep(deps, onTick(deps), sweep(report)); // the next range starts at 12:01
    clock.set(new Date('2026-02-01T12:01:00Z'));
    await expect(recordedSweep(deps, onTick(deps), sweep(new Error('a bug')))).rejects.toThrow('a bug');
    expect(runs.runs.get('requeue-sweep')).toMatchObject({
      ok: false,
      error: 'a bug',
      nextWindowStart: new Date('2026-02-01T12:01:00Z'),
    });
    clock.set(new Date('2026-02-01T12:02:00Z'));
    await recordedSweep(deps, onTick(deps), sweep(report));
    expect(resumedAt[2]).toEqual(new Date('2026-02-01T12:01:00Z'));
  });

  it('records a failed sweep and rethrows', async () => {
    const { runs, deps, sweep } = setup();
    await expect(recordedSweep(deps, onTick(deps), sweep(new Error('listDue failed')))).rejects.toThrow(
      'listDue failed',
    );
    expect(runs.runs.get('requeue-sweep')).toMatchObject({ ok: false, error: 'listDue failed' });
  });

  it.each(['failClaim', 'failFinish'] as const)('still sweeps when recording fails (%s)', async (flag) => {
    const { runs, deps, sweep, log } = setup();
    runs[flag] = true;
    await expect(recordedSweep(deps, onTick(deps), sweep(report))).resolves.toBe(report);
    expect(log.lines.some((l) => l.severity === 'WARNING')).toBe(true);
  });

  // A Firestore brownout: the client retries the claim's and the finish's transactions for minutes. Unbounded,
  // a stalled claim held the sweep past its window and the function's timeout (120 s), and a stalled finish
  // the logged failed tick: the invocation was cut off with nothing recorded and nothing logged.
  describe('when Firestore does not answer', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('a claim that never answers is given up at its deadline: the sweep runs unrecorded', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const { runs, deps, sweep, resumedAt, log } = setup();
      runs.claim = () => new Promise(() => {});
      let result: SweepReport | null | undefined;
      void recordedSweep(deps, onTick(deps), sweep(report)).then((r) => {
        result = r;
      });
      await vi.advanceTimersByTimeAsync(CLAIM_TIMEOUT_MS - 1);
      expect(resumedAt).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(result).toBe(report);
      expect(resumedAt).toEqual([null]);
      expect(log.lines).toContainEqual(
        expect.objectContaining({ severity: 'WARNING', message: 'requeue sweep not recorded' }),
      );
    });

    it('a finish that never answers is given up before the timeout, the failed tick logged', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const { runs, deps, sweep, log } = setup();
      runs.finish = () => new Promise(() => {});
      const timeoutMs = 120_000;
      let result: SweepReport | null | undefined;
      const failed = { ...report, failure: new Error('listDue gave no answer') };
      // The sweep took 1.5 s (the clock), and the record is waited for until RECORD_MARGIN_MS before the end.
      void recordedSweep({ ...deps, timeoutMs }, onTick(deps), sweep(failed)).then((r) => {
        result = r;
      });
      await vi.advanceTimersByTimeAsync(timeoutMs - RECORD_MARGIN_MS - 1_500 - 1);
      expect(result).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(result).toBe(failed);
      expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([
        expect.objectContaining({ job: 'requeue-sweep', error: 'sweep stopped: listDue gave no answer' }),
      ]);
    });
  });
});
