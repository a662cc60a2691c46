import { describe, expect, it, vi } from 'vitest';
import { BUILD_COST_FACTOR, SharedFleetView, serialiseView } from './shared-view.js';
import type { FleetView } from './view-model.js';

const viewAt = (generatedAt: string, phase = 'Ready'): FleetView =>
  ({ generatedAt, rows: [{ name: 'p-1', phase }], phases: { [phase]: 1 }, jobs: [] }) as unknown as FleetView;

describe('serialiseView', () => {
  it('gives JSON.stringify(view) as data, and a key that the time alone does not change', () => {
    const a = serialiseView(viewAt('2026-02-01T12:00:00.000Z'));
    const b = serialiseView(viewAt('2026-02-01T12:00:05.000Z'));
    expect(a.data).toBe(JSON.stringify(viewAt('2026-02-01T12:00:00.000Z')));
    expect(a.key).toBe(b.key);
    expect(serialiseView(viewAt('2026-02-01T12:00:00.000Z', 'Unhealthy')).key).not.toBe(a.key);
  });
});

describe('SharedFleetView', () => {
  it('waits K times the last build cost before the next, then builds every change made meanwhile in', () => {
    let now = 0;
    let phase = 'Ready';
    let builds = 0;
    const shared = new SharedFleetView(
      () => {
        builds++;
        now += 100; // what a build costs
        return viewAt('2026-02-01T12:00:00.000Z', phase);
      },
      50,
      () => now,
    );
    expect(shared.get().dueInMs).toBeNull();
    expect(shared.gapMs()).toBe(BUILD_COST_FACTOR * 100);
    phase = 'Unhealthy';
    shared.changed();
    now += 100;
    const early = shared.get();
    expect(builds).toBe(1);
    expect(early.view.data).toContain('"Ready"');
    expect(early.dueInMs).toBe(BUILD_COST_FACTOR * 100 - 100);
    now += early.dueInMs!;
    const late = shared.get();
    expect(builds).toBe(2);
    expect(late.dueInMs).toBeNull();
    expect(late.view.data).toContain('"Unhealthy"');
  });

  it('keeps the key string of unchanged content, and builds afresh after drop()', () => {
    let now = 0;
    let builds = 0;
    const shared = new SharedFleetView(
      () => {
        builds++;
        return viewAt(new Date(now).toISOString());
      },
      50,
      () => now,
    );
    const first = shared.get().view;
    now += 50;
    const second = shared.get().view;
    expect(second).not.toBe(first);
    expect(second.key).toBe(first.key);
    shared.drop();
    shared.get();
    expect(builds).toBe(3);
  });

  it('takes a view built while no stream counted changes as missing some once one does; the last one drops it', () => {
    let now = 0;
    const shared = new SharedFleetView(
      () => viewAt('2026-02-01T12:00:00.000Z'),
      200,
      () => now,
    );
    shared.get(); // a poll's, with no stream open: nobody counts the changes made after it
    now = 50;
    const unwatch = shared.watch();
    expect(shared.get().dueInMs).toBe(150);
    now = 200;
    expect(shared.get().dueInMs).toBeNull();
    unwatch();
    expect(shared.holding).toBe(false);
  });

  it('lets go of a view that polls alone built once it is older than the gap, but not while a stream watches', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const base = Date.now();
      const shared = new SharedFleetView(
        () => viewAt('2026-02-01T12:00:00.000Z'),
        200,
        () => Date.now() - base,
      );
      shared.get();
      vi.advanceTimersByTime(199);
      expect(shared.holding).toBe(true);
      vi.advanceTimersByTime(1);
      expect(shared.holding).toBe(false);
      shared.get();
      const unwatch = shared.watch();
      vi.advanceTimersByTime(1_000);
      expect(shared.holding).toBe(true);
      unwatch();
      expect(shared.holding).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });
});
