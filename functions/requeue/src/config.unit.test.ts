import { describe, expect, it } from 'vitest';
import { loadRequeueConfig, mostTickPeriodMs, RequeueEnv } from './config.js';

const base = { GOOGLE_CLOUD_PROJECT: 'demo-p' };

describe("requeue config: the tick period fits the function's timeout", () => {
  // A sweep runs to its tick + period − margin, its last page may be waited for a grace past that, and its
  // record is written after: a period past the 120 s timeout (600 s was allowed) cut every sweep off.
  it('refuses a period of 300 s', () => {
    const r = RequeueEnv.safeParse({ ...base, REQUEUE_TICK_PERIOD_SECONDS: '300' });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(/120 s timeout/);
    expect(() => loadRequeueConfig({ ...base, REQUEUE_TICK_PERIOD_SECONDS: '300' })).toThrow();
  });

  it('accepts the default (unset: the schedule table), short local periods and the bound itself', () => {
    expect(loadRequeueConfig(base).REQUEUE_TICK_PERIOD_SECONDS).toBeUndefined();
    expect(RequeueEnv.safeParse({ ...base, REQUEUE_TICK_PERIOD_SECONDS: '2' }).success).toBe(true);
    expect(RequeueEnv.safeParse({ ...base, REQUEUE_TICK_PERIOD_SECONDS: '60' }).success).toBe(true);
    expect(RequeueEnv.safeParse({ ...base, REQUEUE_TICK_PERIOD_SECONDS: '110' }).success).toBe(true);
    expect(RequeueEnv.safeParse({ ...base, REQUEUE_TICK_PERIOD_SECONDS: '111' }).success).toBe(false);
  });

  it('counts a poll longer than the listDue grace in the bound', () => {
    expect(mostTickPeriodMs(1_000, 120)).toBe(110_000);
    expect(mostTickPeriodMs(10_000, 120)).toBe(105_000);
    expect(
      RequeueEnv.safeParse({ ...base, REQUEUE_POLL_MS: '10000', REQUEUE_TICK_PERIOD_SECONDS: '110' }).success,
    ).toBe(false);
  });
});
