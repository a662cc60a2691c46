import { describe, expect, it } from 'vitest';
import { JobSchedulerError } from '../../ports/job-scheduler.js';
import { canonicalCode } from '../google-error-code.js';
import { toJobSchedulerError } from './errors.js';

// What gax 5 throws on the REST fallback: code = HTTP status, message = Google's JSON error body.
const rest = (http: number, status: string) =>
  Object.assign(new Error(JSON.stringify({ error: { code: http, message: 'm', status } })), { code: http });
// What it throws on gRPC: code = the canonical code number.
const grpc = (code: number) => Object.assign(new Error(`${code} X: m`), { code });

describe('canonicalCode', () => {
  it.each([
    ['REST 404 NOT_FOUND', rest(404, 'NOT_FOUND'), 'NOT_FOUND'],
    ['REST 400 FAILED_PRECONDITION', rest(400, 'FAILED_PRECONDITION'), 'FAILED_PRECONDITION'],
    ['REST 400 INVALID_ARGUMENT', rest(400, 'INVALID_ARGUMENT'), 'INVALID_ARGUMENT'],
    ['REST 403 without a body', Object.assign(new Error('Forbidden'), { code: 403 }), 'PERMISSION_DENIED'],
    ['REST status field only', Object.assign(new Error('x'), { status: 503 }), 'UNAVAILABLE'],
    ['gRPC 5', grpc(5), 'NOT_FOUND'],
    ['gRPC 9', grpc(9), 'FAILED_PRECONDITION'],
    ['gRPC 7', grpc(7), 'PERMISSION_DENIED'],
    ['gRPC 14', grpc(14), 'UNAVAILABLE'],
    ['connection refused', Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), 'UNAVAILABLE'],
    ['no code at all', new Error('Could not load the default credentials'), 'UNKNOWN'],
    ['not an error', 'boom', 'UNKNOWN'],
  ])('%s → %s', (_, err, code) => {
    expect(canonicalCode(err)).toBe(code);
  });
});

describe('toJobSchedulerError', () => {
  it.each([
    [rest(404, 'NOT_FOUND'), 'read', 'unknown_job'],
    [grpc(5), 'change', 'unknown_job'],
    [rest(400, 'FAILED_PRECONDITION'), 'run', 'paused'],
    [grpc(9), 'change', 'refused'],
    [rest(403, 'PERMISSION_DENIED'), 'run', 'denied'],
    [grpc(16), 'read', 'denied'],
    [rest(400, 'INVALID_ARGUMENT'), 'read', 'unavailable'],
    [grpc(14), 'read', 'unavailable'],
    [grpc(4), 'change', 'unavailable'],
    // A run whose failure may follow the dispatch: not a blip to retry (a second tick).
    [grpc(4), 'run', 'outcome_unknown'],
    [grpc(14), 'run', 'outcome_unknown'],
    [grpc(13), 'run', 'outcome_unknown'],
    [rest(504, 'DEADLINE_EXCEEDED'), 'run', 'outcome_unknown'],
    [Object.assign(new Error('reset'), { code: 'ECONNRESET' }), 'run', 'outcome_unknown'],
    [new Error('socket hang up'), 'run', 'outcome_unknown'],
    // Refused, or never sent: nothing dispatched.
    [grpc(8), 'run', 'unavailable'],
    [rest(400, 'INVALID_ARGUMENT'), 'run', 'unavailable'],
    [Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), 'run', 'unavailable'],
  ] as const)('%o on %s → %s', (err, op, kind) => {
    const mapped = toJobSchedulerError(err, op, 'gc-sweep');
    expect(mapped).toBeInstanceOf(JobSchedulerError);
    expect(mapped.kind).toBe(kind);
    expect(mapped.cause).toBe(err);
    expect(mapped.message).toContain('gc-sweep');
  });

  it('passes a JobSchedulerError through', () => {
    const err = new JobSchedulerError('paused', 'p');
    expect(toJobSchedulerError(err, 'read', 'x')).toBe(err);
  });
});
