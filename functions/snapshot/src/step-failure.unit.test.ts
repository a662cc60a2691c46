import { describe, expect, it } from 'vitest';
import { PublishError } from '../../../shared/src/ports/publish-error.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import { type FailedStep, permanentStepFailure, retriesOf } from './step-failure.js';

describe('permanentStepFailure', () => {
  it.each<[string, unknown, boolean]>([
    ['a snapshot the publisher refuses (over 9 MiB)', new PublishError('invalid_payload', 'too big'), true],
    ['Pub/Sub unavailable', new PublishError('unavailable', 'down'), false],
    ['an earlier publish still unconfirmed', new PublishError('unconfirmed', 'no answer'), false],
    // INVALID_ARGUMENT: past the size limit, but also a transaction that expired while it stalled.
    ['a commit Firestore refuses', new WorkerStoreError('rejected', 'transaction expired'), false],
    ['a stored document out of shape', new WorkerStoreError('invalid', 'edited by hand'), true],
    ['Firestore unavailable', new WorkerStoreError('unavailable', 'down'), false],
    ['a conflict', new WorkerStoreError('conflict', 'changed meanwhile'), false],
    ['anything else', new Error('boom'), false],
  ])('%s: %s', (_n, err, permanent) => {
    expect(permanentStepFailure(err)).toBe(permanent);
  });
});

describe('retriesOf', () => {
  const failed: FailedStep[] = [
    { workerId: 'gw-a', permanent: false },
    { workerId: 'gw-b', permanent: false },
    { workerId: 'gw-c', permanent: true },
  ];

  it('a tick redelivers nothing: it asks for a pass for every retryable step', () => {
    expect(retriesOf(failed, null)).toEqual({ own: [], others: ['gw-a', 'gw-b'] });
  });

  it('a request naming a worker is redelivered for that worker’s step only', () => {
    expect(retriesOf(failed, { workerId: 'gw-a' })).toEqual({ own: ['gw-a'], others: ['gw-b'] });
    expect(retriesOf(failed, { workerId: 'gw-z' })).toEqual({ own: [], others: ['gw-a', 'gw-b'] });
  });

  it('a request naming no worker (a step-retry, an admin change) is redelivered for every retryable step', () => {
    expect(retriesOf(failed, {})).toEqual({ own: ['gw-a', 'gw-b'], others: [] });
  });

  it('a permanent failure is retried by nothing, its own request included', () => {
    expect(retriesOf(failed, { workerId: 'gw-c' })).toEqual({ own: [], others: ['gw-a', 'gw-b'] });
    expect(retriesOf([{ workerId: 'gw-c', permanent: true }], null)).toEqual({ own: [], others: [] });
  });
});
