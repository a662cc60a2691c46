import { describe, expect, it } from 'vitest';
import { classify, computeErrorInfo, operationError, toProviderError } from './errors.js';

/** What @google-cloud/compute 6 over REST throws: code = HTTP status, message = the JSON error body. */
const restError = (code: number, reason?: string) =>
  Object.assign(
    new Error(JSON.stringify({ error: { code, message: 'x', errors: reason ? [{ reason }] : [] } })),
    {
      code,
    },
  );

describe('compute error classification (status codes and reasons, never message text)', () => {
  it.each([
    [restError(403, 'quotaExceeded'), 'quota'],
    [restError(403, 'rateLimitExceeded'), 'transient'],
    // About the caller, never the spec: a grant still propagating, the API disabled, VPC Service Controls.
    [restError(403, 'forbidden'), 'transient'],
    [restError(403, 'accessNotConfigured'), 'transient'],
    [restError(400, 'invalid'), 'permanent'],
    [restError(400, 'resourceNotReady'), 'transient'],
    [restError(404, 'notFound'), 'permanent'],
    [restError(409, 'alreadyExists'), 'transient'],
    [restError(429), 'transient'],
    [restError(500, 'backendError'), 'transient'],
    [restError(503), 'transient'],
    // A stockout refused at once (the bulk-insert troubleshooting page's "Insufficient capacity").
    [restError(503, 'insufficientCapacity'), 'quota'],
    [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }), 'transient'],
    // gaxios over a reset keep-alive socket: `error` is the FetchError, whose code is a string.
    [
      Object.assign(new Error('request failed, reason: read ECONNRESET'), {
        code: 'ECONNRESET',
        error: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      }),
      'transient',
    ],
    [{ code: 8, message: 'gRPC resource exhausted' }, 'transient'],
    [{ code: 3, message: 'gRPC invalid argument' }, 'permanent'],
  ])('%# → %s', (err, kind) => {
    expect(classify(computeErrorInfo(err))).toBe(kind);
  });

  it('does not let message text decide: a 404 saying "quota" is still permanent', () => {
    expect(classify(computeErrorInfo(Object.assign(new Error('quota exceeded'), { code: 404 })))).toBe(
      'permanent',
    );
  });

  it('says what GCE refused in the message (one line, cut at 300 characters), not only its status', () => {
    const body = (message: string) =>
      Object.assign(
        new Error(
          JSON.stringify({ error: { code: 400, message, errors: [{ reason: 'invalid', message }] } }),
        ),
        { code: 400 },
      );
    const refused = "Invalid value for field 'resource.machineType': 'n9-x'.\nMachine type does not exist.";
    expect(toProviderError(body(refused), 'instances.insert').message).toBe(
      "instances.insert failed: HTTP 400 invalid: Invalid value for field 'resource.machineType': 'n9-x'. Machine type does not exist.",
    );
    const long = toProviderError(body('y'.repeat(1000)), 'instances.insert').message;
    expect(long).toBe(`instances.insert failed: HTTP 400 invalid: ${'y'.repeat(299)}…`);
    expect(toProviderError(Object.assign(new Error('no body'), { code: 503 }), 'instances.get').message).toBe(
      'instances.get failed: HTTP 503',
    );
  });

  it('keeps status, reason and cause on the ProviderError', () => {
    const cause = restError(403, 'quotaExceeded');
    const e = toProviderError(cause, 'instances.insert');
    expect(e).toMatchObject({ kind: 'quota', status: 403, reason: 'quotaExceeded' });
    expect(e.cause).toBe(cause);
  });

  it.each([
    [{ error: { errors: [{ code: 'QUOTA_EXCEEDED', message: 'CPUS' }] }, httpErrorStatusCode: 403 }, 'quota'],
    [{ error: { errors: [{ code: 'ZONE_RESOURCE_POOL_EXHAUSTED' }] } }, 'quota'],
    [{ error: { errors: [{ code: 'RESOURCE_NOT_FOUND' }] }, httpErrorStatusCode: 404 }, 'permanent'],
    [{ error: { errors: [{ code: 'INTERNAL_ERROR' }] }, httpErrorStatusCode: 500 }, 'transient'],
    // Throttling spelt the Operation's way, on statuses that alone would read as a refusal.
    [
      { error: { errors: [{ code: 'RESOURCE_OPERATION_RATE_EXCEEDED' }] }, httpErrorStatusCode: 403 },
      'transient',
    ],
    [{ error: { errors: [{ code: 'RATE_LIMIT_EXCEEDED' }] }, httpErrorStatusCode: 403 }, 'transient'],
    [{ error: { errors: [{ code: 'RESOURCE_NOT_READY' }] }, httpErrorStatusCode: 400 }, 'transient'],
    // Reconcile's account not (yet) allowed to act as the VMs' service account: a 400 about the caller.
    [
      { error: { errors: [{ code: 'SERVICE_ACCOUNT_ACCESS_DENIED' }] }, httpErrorStatusCode: 400 },
      'transient',
    ],
  ])('an Operation error %# → %s', (op, kind) => {
    expect(operationError(op, 'insert')?.kind).toBe(kind);
  });

  it('an Operation without error is no failure', () => {
    expect(operationError({ status: 'RUNNING' }, 'insert')).toBeNull();
  });
});
