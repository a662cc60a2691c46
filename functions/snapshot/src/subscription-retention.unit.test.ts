import { describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_WORKER_SETTINGS } from '../../../shared/src/domain/workers/settings.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { SessionEnd } from '../../../shared/src/ports/workers-retention.js';
import { retireWorkerSubscriptions } from './subscription-retention.js';

const now = new Date('2026-12-01T12:00:00Z');
const HOUR = 3_600_000;
const horizonAgo = new Date(now.getTime() - DEFAULT_WORKER_SETTINGS.viewHorizonMs);
const dayAgo = new Date(now.getTime() - 24 * HOUR);
const ended = (workerId: string, hoursAgo: number): SessionEnd => ({
  workerId,
  endedAt: new Date(now.getTime() - hoursAgo * HOUR),
});

/** A store whose ended sessions are `sessions`, and a reaper deleting `existing` (others already gone). */
function deps(o: {
  sessions?: SessionEnd[];
  cursor?: SessionEnd | null;
  existing?: string[];
  failOn?: string;
  settings?: typeof DEFAULT_WORKER_SETTINGS;
}) {
  const existing = new Set(o.existing ?? []);
  const retired = {
    subscriptionCursor: vi.fn(async () => o.cursor ?? null),
    sessionsEnded: vi.fn(
      async (_after: SessionEnd | Date, _before: Date, _limit: number) => o.sessions ?? [],
    ),
    saveSubscriptionCursor: vi.fn(async (_c: SessionEnd) => {}),
  };
  const reaper = {
    remove: vi.fn(async (id: string) => {
      if (id === o.failOn) throw Object.assign(new Error('unavailable'), { code: 14 });
      return existing.delete(id);
    }),
  };
  const log = memoryLogger();
  return {
    retired,
    reaper,
    log,
    deps: {
      retired: retired as never,
      clock: new ManualClock(now),
      log,
      settings: o.settings ?? DEFAULT_WORKER_SETTINGS,
      retention: { afterMs: 7 * 24 * HOUR, batch: 20 },
    },
  };
}

describe('retireWorkerSubscriptions', () => {
  it('deletes each ended session’s subscription in order, the gone ones done too, and moves the cursor to the last', async () => {
    const sessions = [ended('gw-1', 5), ended('gw-2', 3), ended('gw-3', 2)];
    const d = deps({ sessions, existing: ['gw-1', 'gw-3'] });
    expect(await retireWorkerSubscriptions(d.deps, d.reaper)).toEqual({ deleted: 2, failures: 0 });
    expect(d.reaper.remove.mock.calls.map((c) => c[0])).toEqual(['gw-1', 'gw-2', 'gw-3']);
    // No cursor yet: from Pub/Sub's expiry (a subscription idle longer is gone), up to the view horizon.
    expect(d.retired.sessionsEnded).toHaveBeenCalledWith(dayAgo, horizonAgo, 20);
    expect(d.retired.saveSubscriptionCursor).toHaveBeenCalledWith(sessions[2]);
    expect(d.log.lines).toEqual([
      expect.objectContaining({ event: 'gateway.worker_subscriptions_deleted', workers: ['gw-1', 'gw-3'] }),
    ]);
  });

  it.each([
    ['a cursor within the day: from the cursor', ended('gw-0', 6), 'cursor'],
    ['a cursor older than the expiry: from the expiry', ended('gw-0', 30), 'floor'],
  ])('%s', async (_name, cursor, from) => {
    const d = deps({ cursor });
    await retireWorkerSubscriptions(d.deps, d.reaper);
    expect(d.retired.sessionsEnded).toHaveBeenCalledWith(from === 'cursor' ? cursor : dayAgo, horizonAgo, 20);
    expect(d.retired.saveSubscriptionCursor).not.toHaveBeenCalled();
  });

  it('a deletion that fails stops the tick there: the cursor stays before it, one failure, logged', async () => {
    const d = deps({ sessions: [ended('gw-1', 5), ended('gw-2', 3), ended('gw-3', 2)], failOn: 'gw-2' });
    expect(await retireWorkerSubscriptions(d.deps, d.reaper)).toEqual({ deleted: 0, failures: 1 });
    expect(d.reaper.remove).toHaveBeenCalledTimes(2);
    expect(d.retired.saveSubscriptionCursor).toHaveBeenCalledWith(ended('gw-1', 5));
    expect(d.log.lines).toEqual([expect.objectContaining({ severity: 'WARNING', workerId: 'gw-2' })]);
  });

  it('the store failing: one failure, logged, never thrown', async () => {
    const d = deps({});
    d.retired.subscriptionCursor.mockRejectedValue(new WorkerStoreError('unavailable', 'firestore down'));
    expect(await retireWorkerSubscriptions(d.deps, d.reaper)).toEqual({ deleted: 0, failures: 1 });
    expect(d.log.lines).toEqual([expect.objectContaining({ severity: 'WARNING', kind: 'unavailable' })]);
  });

  it('a view horizon past Pub/Sub’s expiry: nothing read, Pub/Sub deletes them first', async () => {
    const settings = { ...DEFAULT_WORKER_SETTINGS, viewHorizonMs: 36 * HOUR };
    const d = deps({ settings });
    expect(await retireWorkerSubscriptions(d.deps, d.reaper)).toEqual({ deleted: 0, failures: 0 });
    expect(d.retired.subscriptionCursor).not.toHaveBeenCalled();
  });
});
