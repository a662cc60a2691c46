import { describe, expect, it } from 'vitest';
import { jobIdOf, jobResourceName } from './job-names.js';
import { timestamp, toScheduledJob } from './job-view.js';

const at = { projectId: 'p', location: 'us-central1' };

describe('job names', () => {
  it('names a table id as Terraform deploys it, and reads it back', () => {
    expect(jobResourceName(at, 'gc-sweep')).toBe('projects/p/locations/us-central1/jobs/gc-sweep');
    expect(jobIdOf(at, 'projects/p/locations/us-central1/jobs/gc-sweep')).toBe('gc-sweep');
  });

  it.each([
    'projects/q/locations/us-central1/jobs/gc-sweep',
    'projects/p/locations/europe-west1/jobs/gc-sweep',
    'projects/p/locations/us-central1/jobs/',
    'projects/p/locations/us-central1/jobs/a/b',
    'gc-sweep',
  ])('%s is not a job of this plane', (resource) => {
    expect(jobIdOf(at, resource)).toBeNull();
  });
});

describe('timestamp', () => {
  it.each([
    [{ seconds: 1767225600, nanos: 500_000_000 }, '2026-01-01T00:00:00.500Z'],
    [{ seconds: '1767225600', nanos: 0 }, '2026-01-01T00:00:00.000Z'],
    [{ seconds: { toNumber: () => 1767225600 } }, '2026-01-01T00:00:00.000Z'],
  ])('%o → %s', (t, iso) => {
    expect(timestamp(t as never)?.toISOString()).toBe(iso);
  });

  it.each([[null], [undefined], [{}], [{ seconds: 0 }], [{ seconds: 'x' }]])('%o → null', (t) => {
    expect(timestamp(t as never)).toBeNull();
  });
});

describe('toScheduledJob', () => {
  const base = {
    name: 'projects/p/locations/us-central1/jobs/probe-tick',
    description: 'd',
    schedule: '* * * * *',
    timeZone: 'Etc/UTC',
    scheduleTime: { seconds: '1767225660' },
  };

  it('an enabled job that never ran: no attempt, no status, the next tick', () => {
    expect(toScheduledJob('probe-tick', { ...base, state: 'ENABLED' })).toEqual({
      id: 'probe-tick',
      resource: base.name,
      description: 'd',
      schedule: '* * * * *',
      timeZone: 'Etc/UTC',
      state: 'ENABLED',
      lastAttemptTime: null,
      lastStatus: null,
      nextRunTime: new Date('2026-01-01T00:01:00Z'),
    });
  });

  it.each([
    [{}, { code: 'OK', message: '' }],
    [{ status: null }, { code: 'OK', message: '' }],
    [{ status: { code: 14, message: 'publish failed' } }, { code: 'UNAVAILABLE', message: 'publish failed' }],
  ])('after an attempt, status %o → %o', (extra, status) => {
    const job = toScheduledJob('probe-tick', {
      ...base,
      state: 'ENABLED',
      lastAttemptTime: { seconds: 1767225600 },
      ...extra,
    });
    expect(job.lastStatus).toEqual(status);
    expect(job.lastAttemptTime).toEqual(new Date('2026-01-01T00:00:00Z'));
  });

  it.each([
    [1, 'ENABLED'],
    [2, 'PAUSED'],
    ['PAUSED', 'PAUSED'],
    ['DISABLED', 'DISABLED'],
    [9, 'STATE_UNSPECIFIED'],
    [undefined, 'STATE_UNSPECIFIED'],
  ] as const)('state %o → %s', (state, name) => {
    expect(toScheduledJob('x', { ...base, state: state as never }).state).toBe(name);
  });

  it('a paused job has no next run, whatever scheduleTime says', () => {
    expect(toScheduledJob('x', { ...base, state: 'PAUSED' }).nextRunTime).toBeNull();
  });
});
