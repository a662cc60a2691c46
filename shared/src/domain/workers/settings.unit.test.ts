import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKER_SETTINGS, loadWorkerSettings } from './settings.js';

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
});
