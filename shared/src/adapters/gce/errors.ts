// Compute errors → the seed's classes (Transient / Permanent / QuotaExceeded), from HTTP status codes
// and GCE reasons only, never message text. @google-cloud/compute 6 over REST surfaces a GaxiosError-like
// object whose `code` is the HTTP status and whose `message` is the JSON error body; the reason is a field
// of that body (../shared/design/gcp-offline-recipes.md §3). Operation errors carry GCE codes instead.
import type { protos } from '@google-cloud/compute';
import type { FailureKind } from '../../domain/reconcile/types.js';
import { ProviderError } from '../../ports/provider.js';

export interface ComputeErrorInfo {
  httpStatus: number | undefined;
  grpcCode: number | undefined;
  reason: string | undefined;
}

// google.rpc codes a future gRPC-mapped client would surface, by their HTTP equivalent.
const GRPC_TO_HTTP: Record<number, number> = {
  3: 400,
  4: 504,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  10: 409,
  13: 500,
  14: 503,
};

function jsonBody(message: unknown): Record<string, unknown> | undefined {
  if (typeof message !== 'string' || !message.startsWith('{')) return undefined;
  try {
    return JSON.parse(message) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Google's API error object: in the message as JSON (REST) or on the error itself. */
interface ApiError {
  code?: number;
  message?: unknown;
  errors?: Array<{ reason?: string; message?: unknown }>;
  details?: Array<{ reason?: string }>;
}

function apiErrorOf(e: Record<string, unknown>): ApiError | undefined {
  return (jsonBody(e.message)?.error ?? e.error) as ApiError | undefined;
}

export function computeErrorInfo(err: unknown): ComputeErrorInfo {
  const e = (err ?? {}) as Record<string, unknown>;
  const apiError = apiErrorOf(e);
  const reason =
    apiError?.errors?.[0]?.reason ??
    apiError?.details?.find((d) => typeof d?.reason === 'string')?.reason ??
    (typeof e.reason === 'string' ? e.reason : undefined);
  const numeric = typeof e.code === 'number' ? e.code : undefined;
  const grpcCode = numeric !== undefined && numeric < 100 ? numeric : undefined;
  const httpStatus =
    typeof e.status === 'number'
      ? e.status
      : numeric !== undefined && numeric >= 100
        ? numeric
        : grpcCode !== undefined
          ? GRPC_TO_HTTP[grpcCode]
          : // A network failure carries the fetch error as `error`, whose `code` is a string such as
            // "ECONNRESET": that is no HTTP status, and no answer at all means transient.
            typeof apiError?.code === 'number'
            ? apiError.code
            : undefined;
  return { httpStatus, grpcCode, reason };
}

/**
 * Stockouts and quota: nothing to fix in the spec, retry after QuotaRetry. A stockout mostly arrives in
 * the insert Operation (ZONE_RESOURCE_POOL_EXHAUSTED[_WITH_DETAILS]); when GCE refuses it at once it
 * answers HTTP 503 with reason `insufficientCapacity`
 * (https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-bulk-vm-creation), which the
 * status alone would take for a transient 5xx.
 */
const QUOTA_REASONS = new Set([
  'quotaExceeded',
  'QUOTA_EXCEEDED',
  'insufficientCapacity',
  'ZONE_RESOURCE_POOL_EXHAUSTED',
  'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS',
  'RESOURCE_EXHAUSTED',
]);
/**
 * Throttling and "busy" answers: retry soon. An Operation's errors spell them in upper case
 * (RESOURCE_OPERATION_RATE_EXCEEDED: "too frequent operations from the source resource", a burst of
 * creates from one image — HTTP 403, which the status alone would take for a refusal to latch).
 */
const TRANSIENT_REASONS = new Set([
  'rateLimitExceeded',
  'userRateLimitExceeded',
  'resourceNotReady',
  'backendError',
  'internalError',
  'RATE_LIMIT_EXCEEDED',
  'RESOURCE_OPERATION_RATE_EXCEEDED',
  'RESOURCE_NOT_READY',
  'INTERNAL_ERROR',
]);

/**
 * A refusal of who is calling rather than of what is asked, whatever its status: reconcile's account may
 * not act as the VMs' service account — on a first deploy, often only until its grant has propagated. GCE
 * reports it in the insert Operation with HTTP 400, which the status alone would take for the spec's fault
 * and latch every proxy created meanwhile Failed.
 */
const CALLER_REASONS = new Set(['SERVICE_ACCOUNT_ACCESS_DENIED']);

export function classify(info: ComputeErrorInfo): FailureKind {
  if (info.reason && QUOTA_REASONS.has(info.reason)) return 'quota';
  if (info.reason && (TRANSIENT_REASONS.has(info.reason) || CALLER_REASONS.has(info.reason))) {
    return 'transient';
  }
  const s = info.httpStatus;
  // No status at all: the request never got an answer (connection refused, reset, timeout).
  if (s === undefined) return 'transient';
  // 401 and 403 are about the caller, never the request: a token being refreshed; a grant still propagating
  // (compute.instances.create, actAs on the VMs' account), the API disabled, VPC Service Controls. Latched,
  // a create refused so would leave its proxy Failed until someone edited a spec that was never the problem.
  if (s >= 500 || s === 429 || s === 408 || s === 401 || s === 403 || s === 409) return 'transient';
  // 400 invalid field, 404 image / zone / machine type not found: a person must change the spec. A network,
  // subnetwork or service account of the function's configuration that does not exist is refused with the
  // same reasons (`invalid`, `notFound`) — only the message names the field, and message text never
  // classifies —, so it latches too: fixed in the configuration, a manual reconcile brings each proxy back.
  return 'permanent';
}

/**
 * 5xx, 429 and unanswered requests are worth an immediate retry inside the call (the client retries
 * none) — but not a stockout or quota answer, whatever its status: capacity does not come back within
 * the seconds such a retry waits, and the QuotaRetry requeue is the retry meant for it.
 */
export function isRetryable(info: ComputeErrorInfo): boolean {
  if (info.reason && QUOTA_REASONS.has(info.reason)) return false;
  const s = info.httpStatus;
  return s === undefined || s >= 500 || s === 429 || info.reason === 'rateLimitExceeded';
}

const MAX_TEXT = 300;

/**
 * GCE's own words for a refusal ("Invalid value for field 'resource.machineType': 'n9-x'. …"), one line,
 * at most 300 characters: for people only — the Failed condition's message and the `proxy.failed` line's
 * `detail` are where operations.md sends them to learn what to fix. Never used to classify.
 */
export function computeErrorText(err: unknown): string | undefined {
  const apiError = apiErrorOf((err ?? {}) as Record<string, unknown>);
  const text = [apiError?.errors?.[0]?.message, apiError?.message].find(
    (m): m is string => typeof m === 'string' && m.trim() !== '',
  );
  if (text === undefined) return undefined;
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > MAX_TEXT ? `${line.slice(0, MAX_TEXT - 1)}…` : line;
}

export function toProviderError(err: unknown, what: string): ProviderError {
  if (err instanceof ProviderError) return err;
  const info = computeErrorInfo(err);
  const detail = [info.httpStatus && `HTTP ${info.httpStatus}`, info.reason].filter(Boolean).join(' ');
  const text = computeErrorText(err);
  const message = `${what} failed${detail ? `: ${detail}` : ''}${text ? `: ${text}` : ''}`;
  return new ProviderError(classify(info), message, {
    cause: err,
    status: info.httpStatus,
    reason: info.reason,
  });
}

type Operation = protos.google.cloud.compute.v1.IOperation;

/** The failure an Operation reports (GCE puts quota and stockouts here, with HTTP 200 on the call). */
export function operationError(op: Operation | null | undefined, what: string): ProviderError | null {
  const first = op?.error?.errors?.[0];
  if (!first) return null;
  const info: ComputeErrorInfo = {
    httpStatus: typeof op?.httpErrorStatusCode === 'number' ? op.httpErrorStatusCode : undefined,
    grpcCode: undefined,
    reason: first.code ?? undefined,
  };
  const detail = [first.code, info.httpStatus && `HTTP ${info.httpStatus}`].filter(Boolean).join(', ');
  return new ProviderError(classify(info), `${what} failed (${detail}): ${first.message ?? ''}`.trim(), {
    status: info.httpStatus,
    reason: info.reason,
  });
}
