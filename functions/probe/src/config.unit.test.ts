import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadProbeConfig, ProbeEnv } from './config.js';

const base = { GOOGLE_CLOUD_PROJECT: 'demo-p' };

describe('probe config: the PASSIVE track', () => {
  it.each<[string, Record<string, string>, Record<string, number>]>([
    [
      'defaults: success 2, failure 3, expiry three tick periods',
      {},
      {
        PROBE_PASSIVE_SUCCESS_THRESHOLD: 2,
        PROBE_PASSIVE_FAILURE_THRESHOLD: 3,
        PROBE_PASSIVE_EXPIRY_SECONDS: 180,
      },
    ],
    [
      'expiry follows the tick period',
      { PROBE_TICK_PERIOD_SECONDS: '30' },
      { PROBE_PASSIVE_EXPIRY_SECONDS: 90 },
    ],
    [
      'an explicit expiry wins',
      { PROBE_PASSIVE_EXPIRY_SECONDS: '600' },
      { PROBE_PASSIVE_EXPIRY_SECONDS: 600 },
    ],
    [
      'two ticks: kept at the next quiet tick, dropped at the second',
      { PROBE_PASSIVE_EXPIRY_SECONDS: '120' },
      { PROBE_PASSIVE_EXPIRY_SECONDS: 120 },
    ],
    ['three ticks, set', { PROBE_PASSIVE_EXPIRY_SECONDS: '180' }, { PROBE_PASSIVE_EXPIRY_SECONDS: 180 }],
  ])('%s', (_name, env, expected) => {
    expect(ProbeEnv.parse({ ...base, ...env })).toMatchObject(expected);
  });

  it.each<[string, Record<string, string>]>([
    [
      'an expiry no longer than a tick (every track would expire before its next signal)',
      { PROBE_PASSIVE_EXPIRY_SECONDS: '60' },
    ],
    // Counted in ticks less half a tick (passive-track.ts): 80 − 30 and 90 − 30 are no longer than the
    // 60 s tick, so every track would go at the next quiet tick.
    [
      'an expiry of 80 s with 60 s ticks (dropped at the next quiet tick)',
      { PROBE_PASSIVE_EXPIRY_SECONDS: '80' },
    ],
    ['an expiry of 1.5 ticks (90 s with 60 s ticks)', { PROBE_PASSIVE_EXPIRY_SECONDS: '90' }],
    [
      'an expiry of 1.5 ticks (45 s with 30 s ticks)',
      { PROBE_TICK_PERIOD_SECONDS: '30', PROBE_PASSIVE_EXPIRY_SECONDS: '45' },
    ],
    ['a zero threshold', { PROBE_PASSIVE_FAILURE_THRESHOLD: '0' }],
    ['a failure ratio above 1', { PROBE_PASSIVE_MAX_FAILURE_RATIO: '1.5' }],
  ])('rejects %s', (_name, env) => {
    expect(ProbeEnv.safeParse({ ...base, ...env }).success).toBe(false);
  });
});

describe('probe config: the TARGET slots', () => {
  it.each<[string, Record<string, string>, number]>([
    ['default: 4 × the probe slots', {}, 256],
    ['follows PROBE_CONCURRENCY', { PROBE_CONCURRENCY: '10' }, 40],
    ['an explicit value wins', { PROBE_CONCURRENCY: '10', PROBE_TARGET_CONCURRENCY: '7' }, 7],
  ])('%s', (_name, env, slots) => {
    expect(ProbeEnv.parse({ ...base, ...env }).PROBE_TARGET_CONCURRENCY).toBe(slots);
  });

  it.each(['0', '4096', 'many'])('rejects PROBE_TARGET_CONCURRENCY=%s', (v) => {
    expect(ProbeEnv.safeParse({ ...base, PROBE_TARGET_CONCURRENCY: v }).success).toBe(false);
  });
});

describe('probe config: the run budget', () => {
  it("leaves the function's last writes 10 s before its timeout (shared/topology/functions.json)", () => {
    const table = JSON.parse(
      readFileSync(new URL('../../../shared/topology/functions.json', import.meta.url), 'utf8'),
    ) as { functions: Record<string, { timeoutSeconds: number }> };
    const budget = ProbeEnv.parse(base).PROBE_RUN_BUDGET_SECONDS;
    expect(budget).toBe(110);
    expect(budget + 10).toBeLessThanOrEqual(table.functions.probe!.timeoutSeconds);
  });
});

describe('probe config: the loop', () => {
  // Past the run budget less a pass's least budget, the last pass ran into the function's timeout; the
  // killed run's deadline, still ahead, held every later run back until each was killed in turn.
  it.each([
    ['105', true],
    ['106', false],
    ['300', false],
  ])('PROBE_LOOP_SECONDS=%s with the default run budget (110 s): accepted %s', (loop, ok) => {
    expect(ProbeEnv.safeParse({ ...base, PROBE_LOOP_SECONDS: loop }).success).toBe(ok);
  });

  it('follows the run budget it is given', () => {
    expect(
      ProbeEnv.safeParse({ ...base, PROBE_LOOP_SECONDS: '95', PROBE_RUN_BUDGET_SECONDS: '100' }).success,
    ).toBe(true);
    expect(
      ProbeEnv.safeParse({ ...base, PROBE_LOOP_SECONDS: '96', PROBE_RUN_BUDGET_SECONDS: '100' }).success,
    ).toBe(false);
  });

  // Told the loop must be at most the budget less 5, an operator raised the budget past the 120 s
  // timeout: every run was killed at 120 s, recorded as running, and active probing stored nothing again.
  it("refuses a budget past the function's timeout less 10 s, naming the timeout", () => {
    const r = ProbeEnv.safeParse({ ...base, PROBE_LOOP_SECONDS: '170', PROBE_RUN_BUDGET_SECONDS: '200' });
    expect(r.success).toBe(false);
    const budget = r.error?.issues.find((i) => i.path[0] === 'PROBE_RUN_BUDGET_SECONDS');
    expect(budget?.message).toMatch(/120 s timeout/);
    expect(ProbeEnv.safeParse({ ...base, PROBE_RUN_BUDGET_SECONDS: '111' }).success).toBe(false);
    expect(ProbeEnv.safeParse({ ...base, PROBE_RUN_BUDGET_SECONDS: '110' }).success).toBe(true);
  });

  it('says how far the loop can go at most, not just relative to the budget', () => {
    const r = ProbeEnv.safeParse({ ...base, PROBE_LOOP_SECONDS: '170' });
    const loop = r.error?.issues.find((i) => i.path[0] === 'PROBE_LOOP_SECONDS');
    expect(loop?.message).toMatch(/cannot exceed 110/);
    expect(loop?.message).toMatch(/never exceeds 105/);
  });

  it('loads the default', () => {
    expect(() => loadProbeConfig({ ...base })).not.toThrow();
  });
});

describe('probe config: the echo and the handshake', () => {
  it.each<[string, boolean]>([
    ['http://echo.example.net/v1/echo', true],
    ['https://proxyplane-api-1.europe-west4.run.app/v1/echo', true],
    // Not what the prober can fetch through a proxy (proxy-probe.ts speaks http and https).
    ['ftp://echo.example.net/echo', false],
    ['echo.example.net/echo', false],
  ])('PROBE_ECHO_URL and PROBE_HANDSHAKE_URL=%s: accepted %s', (url, ok) => {
    expect(ProbeEnv.safeParse({ ...base, PROBE_ECHO_URL: url }).success).toBe(ok);
    expect(ProbeEnv.safeParse({ ...base, PROBE_HANDSHAKE_URL: url }).success).toBe(ok);
  });
});
