import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import type { JobRunStore } from '../../../shared/src/ports/job-runs.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { onProbeEvent } from './event.js';
import type { ProbeHandlerDeps } from './handler.js';
import { tickEvent } from './tick-event-fixture.unit.js';

describe('onProbeEvent', () => {
  it('a tick that throws logs one structured ERROR line (job.tick_failed) and still fails the invocation', async () => {
    const log = memoryLogger();
    const jobs: JobRunStore = {
      get: async () => null,
      claim: async () => Promise.reject(new Error('14 UNAVAILABLE: No connection established')),
      finish: async () => {},
      list: async () => [],
    };
    // The claim is the tick's first step: nothing past it is reached.
    const deps = {
      jobs,
      clock: new ManualClock(new Date('2026-01-01T00:00:00Z')),
      tickPeriodMs: 60_000,
      log,
    } as unknown as ProbeHandlerDeps;

    await expect(onProbeEvent(deps, log, tickEvent('probe-tick'))).rejects.toThrow('UNAVAILABLE');
    const errors = log.lines.filter((l) => l.severity === 'ERROR');
    expect(errors).toEqual([
      expect.objectContaining({
        event: 'job.tick_failed',
        job: 'probe-tick',
        error: '14 UNAVAILABLE: No connection established',
      }),
    ]);
    expect(missingContractFields(errors[0]!)).toEqual([]);
    // Taken up before its run: the stopped-job alert counts these lines, failed runs included.
    const ticks = log.lines.filter((l) => l.event === 'job.tick');
    expect(ticks).toEqual([expect.objectContaining({ severity: 'INFO', job: 'probe-tick' })]);
    expect(missingContractFields(ticks[0]!)).toEqual([]);
  });

  it('poison is acknowledged (returns) with its own ERROR line, no tick failure', async () => {
    const log = memoryLogger();
    await onProbeEvent({} as ProbeHandlerDeps, log, {
      ...tickEvent('x'),
      data: { message: { data: 'bm9' } },
    });
    expect(log.lines.map((l) => [l.severity, l.message, l.event])).toEqual([
      ['ERROR', 'malformed tick acknowledged', undefined],
    ]);
  });
});
