import { describe, expect, it } from 'vitest';
import { isDueInWindow } from '../../../shared/src/domain/health/due.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import type { JobRun, JobRunStore } from '../../../shared/src/ports/job-runs.js';
import { PassiveFeedError } from '../../../shared/src/ports/passive-feed.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import { fixedFleet, fixedView } from '../../../shared/src/testing/fixed-proxy-view.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { aProxy, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { handleProbeTick, MIN_PASS_BUDGET_MS, type ProbeHandlerDeps, ProbeJob } from './handler.js';
import { PASSIVE_TEST_SETTINGS } from './passive-fixtures.unit.js';
import { echoUp, stoppedWithAddress } from './prober-fixtures.unit.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const sec = (s: number) => new Date(t0.getTime() + s * 1000);

function deps(passiveFails: boolean) {
  const warnings: string[] = [];
  const errors: Array<Record<string, unknown>> = [];
  const finished: Array<Pick<JobRun, 'ok' | 'counts'>> = [];
  const jobs: JobRunStore = {
    get: async () => null,
    claim: async () => ({ previous: null }),
    finish: async (_job, run) => void finished.push(run),
    list: async () => [],
  };
  const d: ProbeHandlerDeps = {
    proxies: fixedFleet([]),
    routing: { get: async () => null },
    jobs,
    clock: new ManualClock(new Date('2026-01-01T00:00:00Z')),
    sleep: async () => {},
    tickPeriodMs: 60_000,
    loopMs: 0,
    health: {
      getMany: async () => new Map(),
      get: async () => null,
      writeMany: async (writes) => writes.map(() => 'written' as const),
      deleteMany: async () => {},
      listNames: async () => [],
    },
    publisher: { publish: async () => {} },
    secrets: { access: async () => '' },
    prober: { probe: async () => ({}) as never, handshake: async () => ({}) as never, direct: echoUp },
    log: {
      info: () => {},
      warn: (m) => void warnings.push(m),
      error: (message, fields) => void errors.push({ message, ...fields }),
    },
    recorder: { observe: () => {} },
    tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
    concurrency: 1,
    passive: {
      outcomes: { between: async () => [] },
      feed: {
        cursor: async () => {
          if (passiveFails) throw new PassiveFeedError('unavailable', 'firestore down');
          return null;
        },
        commit: async () => 'committed' as const,
      },
      ...PASSIVE_TEST_SETTINGS,
    },
  };
  return { d, warnings, errors, finished };
}

describe('handleProbeTick and the passive pass', () => {
  it('a healthy outcome feed: nothing logged', async () => {
    const { d, warnings, errors, finished } = deps(false);
    expect(await handleProbeTick(d)).toMatchObject({ passes: 1, outcomeBatches: 0, passiveSignals: 0 });
    expect([warnings, errors]).toEqual([[], []]);
    expect(finished).toEqual([expect.objectContaining({ ok: true })]);
  });

  it('an unavailable outcome feed: the active passes still run, and the tick is logged failed (part passive), which failing_jobs counts', async () => {
    const { d, warnings, errors, finished } = deps(true);
    expect(await handleProbeTick(d)).toMatchObject({ passes: 1, outcomeBatches: 0, passiveSignals: 0 });
    expect(warnings).toEqual([]);
    expect(errors).toEqual([
      {
        message: 'scheduled tick failed',
        event: 'job.tick_failed',
        job: 'probe-tick',
        part: 'passive',
        error: 'firestore down',
      },
    ]);
    expect(missingContractFields(errors[0]!)).toEqual([]);
    expect(finished).toEqual([expect.objectContaining({ ok: true })]);
  });
});
