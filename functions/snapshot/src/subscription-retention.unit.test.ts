import { describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_WORKER_SETTINGS } from '../../../shared/src/domain/workers/settings.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { SessionEnd } from '../../../shared/src/ports/workers-retention.js';
import {
  retireWorkerSubscriptions,
  SUBSCRIPTION_PAGES_PER_TICK,
  SUBSCRIPTION_RETENTION_BUDGET_MS,
} from './subscription-retention.js';

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

  describe('a backlog (more than a page ended since the last tick)', () => {
    const MINUTE = 60_000;
    const byEnd = (a: SessionEnd, b: SessionEnd) =>
      a.endedAt.getTime() - b.endedAt.getTime() ||
      (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0);

    /**
     * A store over `sessions` (sorted by end) paging as the port says, a cursor it keeps, and a Pub/Sub that
     * holds each worker's subscription until it is deleted or a day past its session's end (its expiry).
     */
    function fleet(sessions: SessionEnd[], clock: ManualClock, deleteMs: number) {
      const endOf = new Map(sessions.map((s) => [s.workerId, s.endedAt.getTime()]));
      const live = new Set(sessions.map((s) => s.workerId));
      let cursor: SessionEnd | null = null;
      const firstAfter = (after: SessionEnd | Date) => {
        const key = after instanceof Date ? { workerId: '', endedAt: after } : after;
        let lo = 0;
        let hi = sessions.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          const s = sessions[mid] as SessionEnd;
          if (byEnd(s, key) <= 0 || (after instanceof Date && s.endedAt <= after)) lo = mid + 1;
          else hi = mid;
        }
        return lo;
      };
      const retired = {
        subscriptionCursor: vi.fn(async () => cursor),
        sessionsEnded: vi.fn(async (after: SessionEnd | Date, before: Date, limit: number) => {
          const page: SessionEnd[] = [];
          for (let i = firstAfter(after); i < sessions.length && page.length < limit; i++) {
            const s = sessions[i] as SessionEnd;
            if (s.endedAt >= before) break;
            page.push(s);
          }
          return page;
        }),
        saveSubscriptionCursor: vi.fn(async (c: SessionEnd) => {
          cursor = c;
        }),
      };
      const expired = (id: string) => (endOf.get(id) ?? 0) <= clock.now().getTime() - 24 * HOUR;
      const reaper = {
        remove: vi.fn(async (id: string) => {
          clock.advance(deleteMs);
          return live.delete(id) && !expired(id);
        }),
      };
      const log = memoryLogger();
      return {
        retired,
        reaper,
        log,
        /** Subscriptions of workers whose session has ended still on the topic: neither deleted nor expired. */
        attached: () =>
          [...live].filter((id) => (endOf.get(id) ?? 0) <= clock.now().getTime() && !expired(id)).length,
        deps: {
          retired: retired as never,
          clock,
          log,
          settings: DEFAULT_WORKER_SETTINGS,
          retention: { afterMs: 7 * 24 * HOUR, batch: 20 },
        },
      };
    }

    it('40 workers retired a minute for 25 hours: the subscriptions left stay far under the topic’s 10,000', async () => {
      // A gateway crash-looping at 40 instances a minute, its sessions ending a minute apart each.
      const start = now.getTime();
      const minutes = 25 * 60;
      const sessions: SessionEnd[] = [];
      for (let m = 0; m < minutes; m++)
        for (let i = 0; i < 40; i++)
          sessions.push({
            workerId: `gw-${m}-${String(i).padStart(2, '0')}`,
            endedAt: new Date(start + m * MINUTE + i * 1000),
          });
      sessions.sort(byEnd);
      const clock = new ManualClock(now);
      const f = fleet(sessions, clock, 50);
      let most = 0;
      for (let m = 0; m < minutes; m++) {
        clock.set(new Date(start + m * MINUTE));
        expect(await retireWorkerSubscriptions(f.deps, f.reaper)).toMatchObject({ failures: 0 });
        if (m % 30 === 29) most = Math.max(most, f.attached());
      }
      // Those within the view horizon (an hour: 2,400) are kept on purpose; every older one is deleted.
      expect(most).toBeLessThan(2_400 + 2 * 40);
      expect(f.attached()).toBeLessThan(2_400 + 2 * 40);
    });

    it('takes further pages while they come back full, up to the pages a tick allows', async () => {
      const sessions = Array.from({ length: 500 }, (_, i) =>
        ended(`gw-${String(i).padStart(3, '0')}`, 20 - i / 100),
      );
      const f = fleet(sessions, new ManualClock(now), 0);
      expect(await retireWorkerSubscriptions(f.deps, f.reaper)).toEqual({
        deleted: 20 * SUBSCRIPTION_PAGES_PER_TICK,
        failures: 0,
      });
      expect(f.retired.sessionsEnded).toHaveBeenCalledTimes(SUBSCRIPTION_PAGES_PER_TICK);
      // Each page from the last session end of the one before: each found once, in order.
      expect(f.retired.sessionsEnded.mock.calls[1]?.[0]).toEqual(sessions[19]);
      expect(f.reaper.remove.mock.calls.map((c) => c[0])).toEqual(
        sessions.slice(0, 20 * SUBSCRIPTION_PAGES_PER_TICK).map((s) => s.workerId),
      );
      expect(f.retired.saveSubscriptionCursor).toHaveBeenCalledOnce();
      expect(f.retired.saveSubscriptionCursor).toHaveBeenCalledWith(
        sessions[20 * SUBSCRIPTION_PAGES_PER_TICK - 1],
      );
    });

    it('slow deletions stop the tick at its time budget: no deletion begun past it, the cursor at the last done', async () => {
      const sessions = Array.from({ length: 100 }, (_, i) =>
        ended(`gw-${String(i).padStart(3, '0')}`, 20 - i / 100),
      );
      const clock = new ManualClock(now);
      // Each deletion takes 3 s by the injected clock: the seventh ends past the budget.
      const f = fleet(sessions, clock, 3_000);
      const done = Math.ceil(SUBSCRIPTION_RETENTION_BUDGET_MS / 3_000);
      expect(await retireWorkerSubscriptions(f.deps, f.reaper)).toEqual({ deleted: done, failures: 0 });
      expect(f.reaper.remove).toHaveBeenCalledTimes(done);
      expect(f.retired.sessionsEnded).toHaveBeenCalledOnce();
      expect(f.retired.saveSubscriptionCursor).toHaveBeenCalledWith(sessions[done - 1]);
    });

    it('the tick’s upkeep deadline stops it before its own budget: no deletion begun past it, the cursor saved at the last done, the next tick goes on from there', async () => {
      const sessions = Array.from({ length: 100 }, (_, i) =>
        ended(`gw-${String(i).padStart(3, '0')}`, 20 - i / 100),
      );
      const clock = new ManualClock(now);
      // The pass left 7 s before the deadline; each deletion takes 3 s: the third begun ends past it.
      const f = fleet(sessions, clock, 3_000);
      const deadline = now.getTime() + 7_000;
      expect(await retireWorkerSubscriptions(f.deps, f.reaper, deadline)).toEqual({
        deleted: 3,
        failures: 0,
      });
      expect(f.reaper.remove).toHaveBeenCalledTimes(3);
      expect(f.retired.saveSubscriptionCursor).toHaveBeenCalledWith(sessions[2]);
      expect(f.log.lines).toContainEqual(
        expect.objectContaining({
          event: 'gateway.upkeep_deadline_reached',
          step: 'subscription_retention',
          deleted: 3,
        }),
      );
      // Past the deadline from the start: not even the cursor is read.
      const late = fleet(sessions, new ManualClock(new Date(deadline)), 0);
      expect(await retireWorkerSubscriptions(late.deps, late.reaper, deadline)).toEqual({
        deleted: 0,
        failures: 0,
      });
      expect(late.retired.subscriptionCursor).not.toHaveBeenCalled();
      expect(late.reaper.remove).not.toHaveBeenCalled();
      // A deadline far off: the page is done whole (the budget and the batch bound it, as before).
      const early = fleet(sessions.slice(0, 10), new ManualClock(now), 0);
      expect(await retireWorkerSubscriptions(early.deps, early.reaper, now.getTime() + 90_000)).toEqual({
        deleted: 10,
        failures: 0,
      });
    });

    it('a later page that cannot be read: the cursor still moves past the pages dealt with, one failure', async () => {
      const sessions = Array.from({ length: 60 }, (_, i) =>
        ended(`gw-${String(i).padStart(3, '0')}`, 20 - i / 100),
      );
      const f = fleet(sessions, new ManualClock(now), 0);
      const read = f.retired.sessionsEnded.getMockImplementation();
      f.retired.sessionsEnded
        .mockImplementationOnce(read as never)
        .mockRejectedValueOnce(new WorkerStoreError('unavailable', 'firestore down'));
      expect(await retireWorkerSubscriptions(f.deps, f.reaper)).toEqual({ deleted: 20, failures: 1 });
      expect(f.retired.saveSubscriptionCursor).toHaveBeenCalledWith(sessions[19]);
      expect(f.log.lines).toContainEqual(
        expect.objectContaining({ severity: 'WARNING', kind: 'unavailable' }),
      );
    });
  });
});
