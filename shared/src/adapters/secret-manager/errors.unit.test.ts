import { describe, expect, it } from 'vitest';
import { SecretAccessError } from '../../ports/secrets.js';
import { classifySecretManagerError, toSecretAccessError } from './errors.js';

// What the REST fallback throws (GaxiosError: code = HTTP status, message = the Status JSON).
const rest = (code: number, status: string) => ({
  code,
  status: code,
  message: JSON.stringify({ error: { code, message: 'whatever the text says', status } }),
});
// What the gRPC transport throws (GoogleError: numeric canonical code).
const grpc = (code: number) => ({ code, message: `${code} SOMETHING: text` });

describe('classifySecretManagerError', () => {
  it.each([
    ['REST 404 NOT_FOUND', rest(404, 'NOT_FOUND'), 'not_found'],
    ['REST 403 PERMISSION_DENIED', rest(403, 'PERMISSION_DENIED'), 'permission_denied'],
    // A rejected access token (a refresh under way), not a missing role: retried like any blip.
    ['REST 401 UNAUTHENTICATED', rest(401, 'UNAUTHENTICATED'), 'transient'],
    ['REST 400 FAILED_PRECONDITION', rest(400, 'FAILED_PRECONDITION'), 'failed_precondition'],
    ['REST 400 INVALID_ARGUMENT', rest(400, 'INVALID_ARGUMENT'), 'invalid_argument'],
    ['REST 503 UNAVAILABLE', rest(503, 'UNAVAILABLE'), 'transient'],
    ['REST 429 RESOURCE_EXHAUSTED', rest(429, 'RESOURCE_EXHAUSTED'), 'transient'],
    ['REST 500 INTERNAL', rest(500, 'INTERNAL'), 'transient'],
    ['REST 501 UNIMPLEMENTED', rest(501, 'UNIMPLEMENTED'), 'invalid_argument'],
    ['gRPC 5', grpc(5), 'not_found'],
    ['gRPC 7', grpc(7), 'permission_denied'],
    ['gRPC 16 UNAUTHENTICATED', grpc(16), 'transient'],
    ['gRPC 9', grpc(9), 'failed_precondition'],
    ['gRPC 3', grpc(3), 'invalid_argument'],
    ['gRPC 14 UNAVAILABLE', grpc(14), 'transient'],
    ['gRPC 4 DEADLINE_EXCEEDED', grpc(4), 'transient'],
    ['gRPC 8 RESOURCE_EXHAUSTED', grpc(8), 'transient'],
    ['HTTP 404 with an HTML body', { code: 404, message: '<html>Not Found</html>' }, 'not_found'],
    ['HTTP 403 without body', { status: 403, message: '' }, 'permission_denied'],
    ['HTTP 502 from a proxy', { code: 502, message: 'Bad Gateway' }, 'transient'],
    ['socket reset', { code: 'ECONNRESET', message: 'socket hang up' }, 'transient'],
    ['a plain Error', new Error('boom'), 'transient'],
    ['undefined', undefined, 'transient'],
  ] as Array<[string, unknown, string]>)('%s → %s', (_, err, kind) => {
    expect(classifySecretManagerError(err)).toBe(kind);
  });

  it('reads the status, not the words: a NOT_FOUND whose message mentions "permission" stays not_found', () => {
    const err = {
      code: 404,
      message: JSON.stringify({ error: { message: 'permission denied', status: 'NOT_FOUND' } }),
    };
    expect(classifySecretManagerError(err)).toBe('not_found');
  });
});

describe('toSecretAccessError', () => {
  it('keeps the cause and the resource, and names no value', () => {
    const cause = rest(400, 'FAILED_PRECONDITION');
    const e = toSecretAccessError(cause, 'projects/p/secrets/s/versions/2');
    expect(e).toBeInstanceOf(SecretAccessError);
    expect(e).toMatchObject({
      kind: 'failed_precondition',
      resource: 'projects/p/secrets/s/versions/2',
      cause,
    });
    expect(e.retryable).toBe(false);
    expect(toSecretAccessError(grpc(14), 'r').retryable).toBe(true);
  });
});

describe('the message of a denied read', () => {
  it('names non-existence too: GCP answers PERMISSION_DENIED for a secret the caller holds no role on', () => {
    const e = toSecretAccessError(grpc(7), 'projects/p/secrets/typo/versions/latest');
    expect(e.kind).toBe('permission_denied');
    expect(e.message).toBe(
      'Secret projects/p/secrets/typo/versions/latest is not accessible to this service account, or does not exist',
    );
  });
});
