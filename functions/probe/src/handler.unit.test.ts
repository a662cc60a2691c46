import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import type { JobRun, JobRunStore } from '../../../shared/src/ports/job-runs.js';
import { PassiveFeedError } from '../../../shared/src/ports/passive-feed.js';
import { handleProbeTick, type ProbeHandlerDeps } from './handler.js';

function deps(passiveFails: boolean) {
  const warnings: string[] = [];
  const finished: Array<Pick<JobRun, 'ok' | 'counts'>> = [];
  const jobs: JobRunStore = {
    get: async () => null,
    claim: async () => ({ previous: null }),
    finish: async (_job, run) => void finished.push(run),
    list: async () => [],
  };
  const d: ProbeHandlerDeps = {
    proxies: { list: async () => [] },
    jobs,
    clock: new ManualClock(new Date('2026-01-01T00:00:00Z')),
    sleep: async () => {},
    tickPeriodMs: 60_000,
    loopMs: 0,
    health: {
      getMany: async () => new Map(),
      get: async () => null,
      writeMany: async () => {},
      deleteMany: async () => {},
      listNames: async () => [],
    },
    publisher: { publish: async () => {} },
    secrets: { access: async () => '' },
    prober: { probe: async () => ({}) as never, handshake: async () => ({}) as never },
    metrics: { observe: () => {}, forget: () => {} },
    log: { info: () => {}, warn: (m) => void warnings.push(m) },
    tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
    concurrency: 1,
    passive: {
      outcomes: { between: async () => [] },
      feed: {
        cursor: async () => {
          if (passiveFails) throw new PassiveFeedError('unavailable', 'firestore down');
          return null;
        },
        commit: async () => {},
      },
      settings: { successThreshold: 2, failureThreshold: 3, expiryMs: 180_000 },
      rule: { minSamples: 5, maxFailureRatio: 0.5 },
      settleMs: 5000,
    },
  };
  return { d, warnings, finished };
}

describe('handleProbeTick and the passive pass', () => {
  it.each([
    ['a healthy outcome feed', false, []],
    [
      'an unavailable outcome feed: logged, the active passes still run',
      true,
      ['passive pass failed; its outcomes are read again next tick'],
    ],
  ])('%s', async (_name, fails, expectedWarnings) => {
    const { d, warnings, finished } = deps(fails);
    const summary = await handleProbeTick(d);
    expect(summary).toMatchObject({ passes: 1, outcomeBatches: 0, passiveSignals: 0 });
    expect(warnings).toEqual(expectedWarnings);
    expect(finished).toEqual([expect.objectContaining({ ok: true })]);
  });
});
