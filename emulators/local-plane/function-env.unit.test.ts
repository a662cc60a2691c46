import { describe, expect, it } from 'vitest';
import { loadScheduleTable } from '../../shared/src/config/topology.js';
import { loadWorkerSettings } from '../../shared/src/domain/workers/settings.js';
import { localApiEnv, localFunctionEnv } from './function-env.js';

const schedules = loadScheduleTable();
const envAt = (speed: number, env: NodeJS.ProcessEnv = {}) =>
  localFunctionEnv({ apiUrl: 'http://127.0.0.1:8080', speed, schedules, env });

describe('localFunctionEnv', () => {
  it('tick periods follow the local cadence and the speed', () => {
    expect(envAt(1)).toMatchObject({ PROBE_TICK_PERIOD_SECONDS: expect.any(String) });
    expect(Number(envAt(2).REQUEUE_TICK_PERIOD_SECONDS)).toBe(
      Number(envAt(1).REQUEUE_TICK_PERIOD_SECONDS) / 2,
    );
  });

  it('keeps the GC duplicate gap below half the GC tick period at every speed', () => {
    // At --speed=2 the 15 s default equalled the 15 s period: delivery jitter made every other tick a
    // "duplicate" that swept nothing.
    const period = schedules.jobs['gc-sweep']!.localEverySeconds;
    for (const speed of [1, 2, 3, 10, 100]) {
      const gap = Number(envAt(speed).GC_MIN_RUN_GAP_SECONDS);
      expect(Number.isInteger(gap), `speed ${speed}`).toBe(true);
      expect(gap, `speed ${speed}`).toBeLessThanOrEqual(period / speed / 2);
    }
    expect(envAt(1).GC_MIN_RUN_GAP_SECONDS).toBe('15');
  });

  it('a value the developer set wins', () => {
    expect(envAt(2, { GC_MIN_RUN_GAP_SECONDS: '1' }).GC_MIN_RUN_GAP_SECONDS).toBeUndefined();
  });

  it("gives the snapshot function and the API the local snapshot tick's period, which the worker timings hold", () => {
    const period = schedules.jobs['snapshot-tick']!.localEverySeconds;
    expect(envAt(1).SNAPSHOT_TICK_SECONDS).toBe(String(period));
    expect(localApiEnv(envAt(1))).toEqual({ SNAPSHOT_TICK_SECONDS: String(period) });
    for (const speed of [0.05, 0.5, 1, 2, 3, 100]) {
      const tick = Number(envAt(speed).SNAPSHOT_TICK_SECONDS);
      // Whole seconds, never shorter than the tick really is.
      expect(Number.isInteger(tick), `speed ${speed}`).toBe(true);
      expect(tick, `speed ${speed}`).toBeGreaterThanOrEqual(period / speed);
      expect(tick, `speed ${speed}`).toBeLessThan(Math.max(1, period / speed + 1));
      expect(() => loadWorkerSettings(envAt(speed)), `speed ${speed}`).not.toThrow();
    }
    expect(envAt(1, { SNAPSHOT_TICK_SECONDS: '7' }).SNAPSHOT_TICK_SECONDS).toBeUndefined();
    expect(localApiEnv(envAt(1, { SNAPSHOT_TICK_SECONDS: '7' }))).toEqual({});
  });
});
