import { describe, expect, it } from 'vitest';
import type { JobView } from './jobs.js';
import { googleError, toRestJob } from './rest-shapes.js';

const view: JobView = {
  id: 'gc-sweep',
  description: 'd',
  schedule: '*/10 * * * *',
  timeZone: 'Etc/UTC',
  everySeconds: 30,
  topic: 'ticks-gc',
  data: Buffer.from('{"job":"gc-sweep"}'),
  attributes: {},
  state: 'PAUSED',
  userUpdateTime: new Date('2026-01-01T00:00:00Z'),
  lastAttemptTime: new Date('2026-01-01T00:00:05Z'),
  lastStatus: { code: 0 },
};

describe('toRestJob', () => {
  it('renders the Cloud Scheduler v1 Job, enums as names by default', () => {
    expect(toRestJob(view, { projectId: 'p', location: 'us-central1', intEnums: false })).toEqual({
      name: 'projects/p/locations/us-central1/jobs/gc-sweep',
      description: 'd',
      pubsubTarget: {
        topicName: 'projects/p/topics/ticks-gc',
        data: 'eyJqb2IiOiJnYy1zd2VlcCJ9',
        attributes: {},
      },
      schedule: '*/10 * * * *',
      timeZone: 'Etc/UTC',
      userUpdateTime: '2026-01-01T00:00:00.000Z',
      state: 'PAUSED',
      status: { code: 0 },
      lastAttemptTime: '2026-01-01T00:00:05.000Z',
    });
  });

  it.each([
    ['ENABLED', 1],
    ['PAUSED', 2],
  ] as const)('renders %s as %i with enum-encoding=int', (state, n) => {
    expect(toRestJob({ ...view, state }, { projectId: 'p', location: 'l', intEnums: true }).state).toBe(n);
  });
});

describe('googleError', () => {
  it.each([
    ['not_found', 404, 'NOT_FOUND'],
    ['failed_precondition', 400, 'FAILED_PRECONDITION'],
    ['unimplemented', 501, 'UNIMPLEMENTED'],
  ] as const)('%s → HTTP %i %s', (kind, http, status) => {
    expect(googleError(kind, 'm')).toEqual({ http, body: { error: { code: http, message: 'm', status } } });
  });
});
