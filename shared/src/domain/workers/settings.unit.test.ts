import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKER_SETTINGS, loadWorkerSettings, WorkerSettingsEnv } from './settings.js';

describe('loadWorkerSettings: the relations safety rests on', () => {
  it('the defaults hold them', () => {
    expect(DEFAULT_WORKER_SETTINGS).toMatchObject({ sessionTtlMs: 30_000, reportIntervalSeconds: 5 });
  });

  // A session TTL at or near the report interval lapses every session just before its next report.
  it.each<[string, string, string, boolean]>([
    ['equal to the interval', '5', '5', false],
    ['exactly twice the interval', '10', '5', false],
    ['above twice the interval', '11', '5', true],
  ])('a session TTL %s', (_n, sessionTtl, interval, ok) => {
    const load = () =>
      loadWorkerSettings({
        WORKER_SESSION_TTL_SECONDS: sessionTtl,
        WORKER_REPORT_INTERVAL_SECONDS: interval,
      });
    if (ok) expect(load().sessionTtlMs).toBe(Number(sessionTtl) * 1000);
    else expect(load).toThrow(/WORKER_SESSION_TTL_SECONDS must be above twice/);
  });

  // A steady worker's only new snapshot version is its renewal: renewals further apart than the max stale
  // age leave it stale for part of each cycle (GRANT − RENEW_BEFORE + tick + skew < MAX_STALE_AGE), and a
  // renewal that comes with the margin or less left lets its proxies pass usableUntil, with the grant, if
  // less than the tick is left, ending and cutting every tunnel (RENEW_BEFORE > tick + margin + skew).
  const STALE = /must be below WORKER_MAX_STALE_AGE_SECONDS/;
  const LATE = /OWNERSHIP_RENEW_BEFORE_SECONDS must be above SNAPSHOT_TICK_SECONDS/;

  it('the defaults hold both, on the deployed one-minute tick', () => {
    expect(WorkerSettingsEnv.parse({})).toMatchObject({
      SNAPSHOT_TICK_SECONDS: 60,
      OWNERSHIP_GRANT_SECONDS: 180,
      OWNERSHIP_RENEW_BEFORE_SECONDS: 150,
      WORKER_MAX_STALE_AGE_SECONDS: 150,
    });
  });

  it('refuses a 10-minute grant: renewals 8 minutes apart, every worker stale most of each cycle', () => {
    expect(() => loadWorkerSettings({ OWNERSHIP_GRANT_SECONDS: '600' })).toThrow(STALE);
  });

  it('refuses renewing 20 s before the grant ends: the next tick comes after it', () => {
    expect(() => loadWorkerSettings({ OWNERSHIP_RENEW_BEFORE_SECONDS: '20' })).toThrow(LATE);
  });

  // Defaults elsewhere: tick 60, skew 5, margin 10, stale 150, grant 180, renew 150.
  it.each<[string, Record<string, string>, boolean]>([
    ['grant 234: renewals ≤ 149 s apart', { OWNERSHIP_GRANT_SECONDS: '234' }, true],
    ['grant 235: renewals up to 150 s apart', { OWNERSHIP_GRANT_SECONDS: '235' }, false],
    ['stale age 96 over renewals ≤ 95 s apart', { WORKER_MAX_STALE_AGE_SECONDS: '96' }, true],
    ['stale age 95 over renewals ≤ 95 s apart', { WORKER_MAX_STALE_AGE_SECONDS: '95' }, false],
    ['tick 114', { SNAPSHOT_TICK_SECONDS: '114' }, true],
    ['tick 115', { SNAPSHOT_TICK_SECONDS: '115' }, false],
    ['skew 59', { CLOCK_SKEW_SECONDS: '59' }, true],
    ['skew 60', { CLOCK_SKEW_SECONDS: '60' }, false],
  ])('renewals against the max stale age: %s', (_n, env, ok) => {
    if (ok) expect(() => loadWorkerSettings(env)).not.toThrow();
    else expect(() => loadWorkerSettings(env)).toThrow(STALE);
  });

  // A 150 s grant keeps the first relation clear of these (150 − 75 + 60 + 5 = 140 < 150).
  it.each<[string, Record<string, string>, boolean]>([
    [
      'renew 76 s before: 16 s left past tick and skew, above the 10 s margin',
      { OWNERSHIP_RENEW_BEFORE_SECONDS: '76' },
      true,
    ],
    ['renew 75 s before: 15 s, the margin and skew only', { OWNERSHIP_RENEW_BEFORE_SECONDS: '75' }, false],
    [
      'margin 84 under renew 150',
      { ALLOCATION_SAFETY_MARGIN_SECONDS: '84', OWNERSHIP_GRANT_SECONDS: '180' },
      true,
    ],
    [
      'margin 85 under renew 150',
      { ALLOCATION_SAFETY_MARGIN_SECONDS: '85', OWNERSHIP_GRANT_SECONDS: '180' },
      false,
    ],
  ])('renewals against usableUntil: %s', (_n, env, ok) => {
    const load = () => loadWorkerSettings({ OWNERSHIP_GRANT_SECONDS: '150', ...env });
    if (ok) expect(load).not.toThrow();
    else expect(load).toThrow(LATE);
  });

  it('says which relation a refused setting breaks, naming the settings', () => {
    const issues = WorkerSettingsEnv.safeParse({ OWNERSHIP_GRANT_SECONDS: '600' }).error?.issues ?? [];
    expect(issues.map((i) => i.message)).toEqual([
      expect.stringMatching(
        /^OWNERSHIP_GRANT_SECONDS − OWNERSHIP_RENEW_BEFORE_SECONDS \+ SNAPSHOT_TICK_SECONDS \+ CLOCK_SKEW_SECONDS must be below WORKER_MAX_STALE_AGE_SECONDS/,
      ),
    ]);
  });

  it('a tick of 0 or past an hour is refused', () => {
    expect(() => loadWorkerSettings({ SNAPSHOT_TICK_SECONDS: '0' })).toThrow();
    expect(() => loadWorkerSettings({ SNAPSHOT_TICK_SECONDS: '3601' })).toThrow();
  });
});
