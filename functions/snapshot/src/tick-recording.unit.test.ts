// A Firestore brownout: the client retries the run's claim (a transaction) and its record for minutes.
// Unbounded, the snapshot tick's pass — every gateway worker's renewed snapshot, stale after 150 s — waited
// behind its bookkeeping claim until the function's timeout cut it off.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLAIM_TIMEOUT_MS, RECORD_MARGIN_MS } from '../../../shared/src/adapters/bounded-job-runs.js';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { type JobRun, type JobRunStore, recordRun } from '../../../shared/src/ports/job-runs.js';
import { SnapshotJob, snapshotRunResult } from './job-run.js';
import { tickRecording } from './tick-recording.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const timeoutMs = 120_000;
const never = () => new Promise<never>(() => {});
const done = { outcome: 'done' as const };

function setup(over: Partial<JobRunStore>) {
  const finished: Array<Pick<JobRun, 'ok'>> = [];
  const runs: JobRunStore = {
    get: async () => null,
    list: async () => [],
    claim: async () => ({ previous: null }),
    finish: async (_job, run) => void finished.push(run),
    ...over,
  };
  const log = memoryLogger();
  const recording = tickRecording({ runs, clock: { now: () => new Date() }, log, timeoutMs });
  return { recording, log, finished };
}

describe('tickRecording: the snapshot tick when Firestore does not answer its run record', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a claim that never answers is given up at CLAIM_TIMEOUT_MS: the pass runs then, unrecorded, and the tick succeeds', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: t0 });
    const { recording, log, finished } = setup({ claim: never });
    let passAt: number | undefined;
    let outcome: unknown;
    void recordRun(
      recording,
      SnapshotJob,
      async () => {
        passAt = Date.now();
        return done;
      },
      snapshotRunResult,
    ).then((r) => (outcome = r));
    await vi.advanceTimersByTimeAsync(CLAIM_TIMEOUT_MS - 1);
    expect(passAt).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(passAt).toBe(t0.getTime() + CLAIM_TIMEOUT_MS);
    expect(outcome).toBe(done);
    expect(finished).toEqual([]);
    expect(log.lines).toContainEqual(
      expect.objectContaining({ severity: 'WARNING', message: 'snapshot tick not recorded' }),
    );
    expect(log.lines.filter((l) => l.severity === 'ERROR')).toEqual([]);
  });

  it('a record that never answers is given up RECORD_MARGIN_MS before the timeout: the tick ends inside it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: t0 });
    const { recording, log } = setup({ finish: never });
    let outcome: unknown;
    // The pass takes 30 s.
    void recordRun(
      recording,
      SnapshotJob,
      () => new Promise<typeof done>((resolve) => setTimeout(() => resolve(done), 30_000)),
      snapshotRunResult,
    ).then((r) => (outcome = r));
    await vi.advanceTimersByTimeAsync(timeoutMs - RECORD_MARGIN_MS - 1);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome).toBe(done);
    expect(log.lines).toContainEqual(
      expect.objectContaining({ severity: 'WARNING', message: 'snapshot tick not recorded' }),
    );
  });
});
