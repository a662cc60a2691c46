import { describe, expect, it } from 'vitest';
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
});
