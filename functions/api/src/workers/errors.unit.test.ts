// How a store failure reaches a worker: by gRPC code (never message text) to a WorkerStoreError kind, and
// from the kind to the answer whose code the worker reacts to (docs/gateway-control-plane.md § Errors).
// Firestore's INVALID_ARGUMENT (a document over 1 MiB, a reserved field name) fails the same way on every
// retry, so it must be a 4xx the worker drops — a 503 made it re-send the same report forever.
import { Hono } from 'hono';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { workerStoreFailure } from '../../../../shared/src/adapters/firestore/worker-errors.js';
import { SubscriptionError } from '../../../../shared/src/adapters/pubsub/snapshot-subscriptions.js';
import { controlReaction } from '../../../../shared/src/domain/gateway/control-reaction.js';
import { workerErrors } from './errors.js';

const log = { info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() };

function answer(err: unknown) {
  const app = new Hono();
  app.onError(workerErrors(log as never));
  app.post('/w', () => {
    throw workerStoreFailure(err, 'write the worker');
  });
  return app.request('/w', { method: 'POST' });
}

const grpc = (code: number) => Object.assign(new Error(`gRPC ${code}`), { code });

describe('store failures as worker answers', () => {
  it.each([
    {
      name: '3 INVALID_ARGUMENT (too large, reserved name)',
      err: grpc(3),
      kind: 'rejected',
      status: 400,
      code: 'invalid_request',
      retryAfter: null,
      reaction: 'drop',
    },
    {
      name: '14 UNAVAILABLE',
      err: grpc(14),
      kind: 'unavailable',
      status: 503,
      code: 'unavailable',
      retryAfter: '1',
      reaction: 'retry',
    },
    {
      name: '4 DEADLINE_EXCEEDED',
      err: grpc(4),
      kind: 'unavailable',
      status: 503,
      code: 'unavailable',
      retryAfter: '1',
      reaction: 'retry',
    },
    {
      name: '9 FAILED_PRECONDITION',
      err: grpc(9),
      kind: 'conflict',
      status: 503,
      code: 'contended',
      retryAfter: '1',
      reaction: 'retry',
    },
    {
      name: '6 ALREADY_EXISTS',
      err: grpc(6),
      kind: 'conflict',
      status: 503,
      code: 'contended',
      retryAfter: '1',
      reaction: 'retry',
    },
    {
      name: 'a stored document out of shape (edited by hand)',
      err: new z.ZodError([]),
      kind: 'invalid',
      status: 500,
      code: 'stored_document_invalid',
      retryAfter: null,
      reaction: 'retry',
    },
    {
      name: 'no code (a network error)',
      err: new Error('socket hang up'),
      kind: 'unavailable',
      status: 503,
      code: 'unavailable',
      retryAfter: '1',
      reaction: 'retry',
    },
  ])('$name → $kind, $status $code', async ({ err, kind, status, code, retryAfter, reaction }) => {
    expect(workerStoreFailure(err, 'x').kind).toBe(kind);
    const res = await answer(err);
    expect(res.status).toBe(status);
    expect(res.headers.get('retry-after')).toBe(retryAfter);
    expect(await res.json()).toMatchObject({ error: code });
    expect(controlReaction(status, code)).toBe(reaction);
  });

  it('classifies by code, never by the message: an INVALID_ARGUMENT text on code 14 is still a retry', () => {
    const err = Object.assign(new Error('3 INVALID_ARGUMENT: maximum entity size is 1048576 bytes'), {
      code: 14,
    });
    expect(workerStoreFailure(err, 'x').kind).toBe('unavailable');
  });
});

describe('the worker subscription at registration', () => {
  function registering(err: unknown) {
    const app = new Hono();
    app.onError(workerErrors(log as never));
    app.post('/register', () => {
      throw err;
    });
    return app.request('/register', { method: 'POST' });
  }

  it('Pub/Sub unavailable while making it → 503 unavailable with Retry-After, which the worker retries', async () => {
    const res = await registering(
      new SubscriptionError('unavailable', 'creating gateway-snapshots--worker-gw-1 failed', {
        cause: grpc(14),
      }),
    );
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: 'unavailable' });
    expect(controlReaction(503, 'unavailable')).toBe('retry');
  });

  it('one that exists with another filter (an operator must fix it) stays a 500', async () => {
    const res = await registering(new SubscriptionError('conflict', 'exists with filter "x"'));
    expect(res.status).toBe(500);
  });
});
