import { describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import type { JobRunStore } from '../../../shared/src/ports/job-runs.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { aProxy } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { onRequeueEvent, type RequeueEventDeps } from './event.js';

const published = '2026-01-01T00:00:00.000Z';
const t0 = new Date(published);
const PERIOD_MS = 60_000;
const MARGIN_MS = 1_000;

// The CloudEvent the functions framework builds from a push of the Scheduler's tick.
const tickEvent = (message: { data?: string; messageId?: string; publishTime?: string }) => ({
  specversion: '1.0',
  id: message.messageId ?? 'ce-id',
  type: 'google.cloud.pubsub.topic.v1.messagePublished',
  source: '//pubsub.googleapis.com/projects/demo/topics/ticks-requeue',
  data: { message },
});
const tickData = Buffer.from(JSON.stringify({ job: 'requeue-sweep' })).toString('base64');

/** Records each claim (its tick and deadline) and grants it. */
function claimingRuns() {
  const claims: Array<{ tick: string | undefined; deadline: Date | undefined }> = [];
  const runs: JobRunStore = {
    get: async () => null,
    list: async () => [],
    claim: async (_job, _now, _gap, deadline, _retry, tick) => {
      claims.push({ tick, deadline });
      return { previous: null };
    },
    finish: async () => {},
  };
  return { runs, claims };
}

async function setup(now: Date) {
  const store = new InMemoryProxyStore();
  await store.create(
    aProxy({ name: 'due', status: { phase: 'Provisioning', nextReconcileAt: new Date(t0.getTime() - 1) } }),
  );
  const clock = new ManualClock(now);
  const publisher = new RecordingReconcilePublisher();
  const log = memoryLogger();
  const { runs, claims } = claimingRuns();
  const deps: RequeueEventDeps = {
    runs,
    store,
    publisher,
    clock,
    sleep: async (ms) => clock.advance(ms),
    log,
    tickPeriodMs: PERIOD_MS,
    marginMs: MARGIN_MS,
    pollMs: 10_000,
    driftPollMs: 3_600_000,
    batch: 10,
    maxBatch: 10,
  };
  return { deps, publisher, log, claims };
}

describe('onRequeueEvent', () => {
  it('claims the run by the tick message’s publish time, its window running from that time', async () => {
    // Delivered 5 s after it was published (a cold start): the window still ends a period after the tick.
    const { deps, publisher, log, claims } = await setup(new Date(t0.getTime() + 5_000));
    await onRequeueEvent(deps, tickEvent({ data: tickData, messageId: '42', publishTime: published }));
    expect(claims).toEqual([{ tick: published, deadline: new Date(t0.getTime() + PERIOD_MS - MARGIN_MS) }]);
    expect(publisher.published.map((r) => r.proxy)).toEqual(['due']);
    const ticks = log.lines.filter((l) => l.event === 'job.tick');
    expect(ticks).toEqual([expect.objectContaining({ severity: 'INFO', job: 'requeue-sweep' })]);
    expect(missingContractFields(ticks[0]!)).toEqual([]);
  });

  it('without a publish time, claims by the message id and sweeps from now', async () => {
    const now = new Date(t0.getTime() + 5_000);
    const { deps, publisher, claims } = await setup(now);
    await onRequeueEvent(deps, tickEvent({ data: tickData, messageId: '42' }));
    expect(claims).toEqual([{ tick: '42', deadline: new Date(now.getTime() + PERIOD_MS - MARGIN_MS) }]);
    expect(publisher.published.map((r) => r.proxy)).toEqual(['due']);
  });

  it.each([
    ['bad base64', { data: 'bm9', messageId: '7', publishTime: published }],
    ['a payload off the schema', { data: Buffer.from('{"job": 42}').toString('base64'), messageId: '7' }],
    ['no data', { messageId: '7', publishTime: published }],
  ])('acknowledges a poison tick (%s) with its own ERROR line: no claim, no sweep', async (_, message) => {
    const { deps, publisher, log, claims } = await setup(t0);
    await onRequeueEvent(deps, tickEvent(message));
    expect(log.lines.map((l) => [l.severity, l.message, l.messageId])).toEqual([
      ['ERROR', 'malformed tick acknowledged', '7'],
    ]);
    expect(claims).toEqual([]);
    expect(publisher.published).toEqual([]);
  });

  it('a sweep that throws logs one job.tick_failed line and is acknowledged (the next tick sweeps)', async () => {
    const { deps, log } = await setup(t0);
    const thrown: RequeueEventDeps = {
      ...deps,
      clock: {
        now: () => {
          throw new Error('clock broke');
        },
      },
    };
    await onRequeueEvent(thrown, tickEvent({ data: tickData, messageId: '42', publishTime: published }));
    const errors = log.lines.filter((l) => l.severity === 'ERROR');
    expect(errors).toEqual([
      expect.objectContaining({ event: 'job.tick_failed', job: 'requeue-sweep', error: 'clock broke' }),
    ]);
  });
  it('waits for the run’s record only until shortly before the function’s timeout (deps.timeoutMs)', async () => {
    const { deps, log } = await setup(new Date(t0.getTime() + 5_000));
    deps.runs = { ...deps.runs, finish: () => new Promise(() => {}) }; // Firestore never answers
    deps.timeoutMs = 120_000;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let done = false;
      const handled = onRequeueEvent(
        deps,
        tickEvent({ data: tickData, messageId: '42', publishTime: published }),
      ).then(() => {
        done = true;
      });
      // Delivered at +5 s, swept to its window's end (+59 s on the sweep's clock): its record is given up
      // 2 s before +5 s + 120 s, 64 s on.
      await vi.advanceTimersByTimeAsync(63_000);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1_100);
      await handled;
      expect(log.lines.filter((l) => l.message === 'requeue sweep not recorded')).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
