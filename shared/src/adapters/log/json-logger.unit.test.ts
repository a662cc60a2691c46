// What a logged error keeps: its cause says which dependency failed and how — a PublishError's message only
// named the topic ("publishing to reconcile-requests failed"), its cause the client's PERMISSION_DENIED.
import { describe, expect, it } from 'vitest';
import { PublishError } from '../../ports/publish-error.js';
import { memoryLogger } from './json-logger.js';

describe('jsonLogger: errors', () => {
  it("keeps a cause chain's name, message and code, not its other fields", () => {
    const log = memoryLogger();
    const grpc = Object.assign(
      new Error('7 PERMISSION_DENIED: User not authorized to perform this action.'),
      {
        code: 7,
        metadata: { internalRepr: 'x' },
      },
    );
    log.warn('requeue publish failed', {
      error: new PublishError('unavailable', 'publishing to reconcile-requests failed', { cause: grpc }),
    });
    expect(log.lines[0]!.error).toEqual({
      name: 'PublishError',
      message: 'publishing to reconcile-requests failed',
      kind: 'unavailable',
      cause: {
        name: 'Error',
        message: '7 PERMISSION_DENIED: User not authorized to perform this action.',
        code: 7,
      },
    });
  });

  it('stops at three causes, so a cause that leads back to itself still logs', () => {
    const log = memoryLogger();
    const loop = new Error('a');
    (loop as Error & { cause: unknown }).cause = loop;
    log.error('x', { error: loop });
    const e = log.lines[0]!.error as Record<string, unknown>;
    const depth = (v: unknown): number =>
      v && typeof v === 'object' ? 1 + depth((v as { cause?: unknown }).cause) : 0;
    expect(depth(e)).toBe(4);
  });

  it('a plain-object cause (a gRPC status) gives its code and message only', () => {
    const log = memoryLogger();
    log.error('x', {
      error: new Error('failed', { cause: { code: 14, message: 'UNAVAILABLE', details: 'y' } }),
    });
    expect(log.lines[0]!.error).toMatchObject({ cause: { code: 14, message: 'UNAVAILABLE' } });
  });
});
