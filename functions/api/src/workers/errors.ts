// The worker endpoints' errors: the API's `{"error": "<stable_code>", "message": …}` shape with the codes of
// docs/gateway-control-plane.md, and the sub-app's onError that renders them (plus the API's own errors
// raised by shared middleware, and store failures: 503 to retry, 400 for a write the store refuses as such).
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { SubscriptionError } from '../../../../shared/src/adapters/pubsub/snapshot-subscriptions.js';
import { InvalidStoredProxy, StoreError } from '../../../../shared/src/ports/proxy-store.js';
import { WorkerStoreError } from '../../../../shared/src/ports/workers.js';
import { ApiError, storedProxyInvalid } from '../errors.js';

export type WorkerErrorCode =
  | 'invalid_request'
  | 'invalid_counts'
  | 'unsupported_protocol_version'
  | 'unauthenticated'
  | 'forbidden'
  | 'unknown_worker'
  | 'stale_session'
  | 'session_expired'
  | 'unknown_snapshot'
  | 'checksum_mismatch'
  | 'stale_epoch'
  | 'version_regression'
  | 'no_ack'
  | 'ack_bound_mismatch'
  | 'sequence_regression'
  | 'sequence_conflict'
  | 'no_snapshot'
  | 'not_found'
  | 'deletion_requested'
  | 'precondition_failed'
  | 'stored_routing_invalid'
  | 'rate_limited'
  | 'payload_too_large'
  | 'unavailable'
  | 'contended';

export class WorkerApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: WorkerErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'WorkerApiError';
  }
}

/** Every refusal of the contract's rules is a 409 with the rule's own code. */
export const conflict = (code: WorkerErrorCode, message: string) => new WorkerApiError(409, code, message);

export const workerErrors =
  (log: Logger) =>
  (err: Error, c: Context): Response => {
    const requestId = c.get('requestId') as string | undefined;
    if (err instanceof WorkerApiError) {
      return c.json({ error: err.code, message: err.message, ...err.extra }, err.status, err.headers);
    }
    if (err instanceof ApiError) {
      const headers: Record<string, string> = { ...err.extra.headers };
      if (err.extra.retryAfterSeconds) headers['Retry-After'] = String(err.extra.retryAfterSeconds);
      return c.json(err.body(), err.status, headers);
    }
    if (err instanceof WorkerStoreError && err.kind === 'rejected') {
      // The same request would be refused the same way again: a 4xx the worker drops (control-reaction.ts),
      // never a 503 it retries forever. Logged at ERROR: the API's limits are meant to make this impossible.
      log.error(`${c.req.method} ${c.req.path}: the store refused the write`, {
        requestId,
        error: err,
        cause: err.cause,
      });
      return c.json(
        { error: 'invalid_request', message: 'the store refused this write; sending it again cannot help' },
        400,
      );
    }
    if (err instanceof WorkerStoreError && err.kind !== 'invalid') {
      log.warn(`${c.req.method} ${c.req.path}: store ${err.kind}`, {
        requestId,
        error: err,
        cause: err.cause,
      });
      return c.json(
        { error: err.kind === 'conflict' ? 'contended' : 'unavailable', message: 'retry shortly' },
        503,
        {
          'Retry-After': '1',
        },
      );
    }
    if (err instanceof WorkerStoreError && err.kind === 'invalid') {
      // A worker's document or its snapshot header edited out of shape (the next pass writes a header whole
      // again; a worker document needs an operator): named, never an anonymous `internal`. A 5xx the worker
      // retries, as every call it makes changes nothing until the document fits again.
      log.error(`${c.req.method} ${c.req.path}: a stored document does not fit`, { requestId, error: err });
      return c.json({ error: 'stored_document_invalid', message: err.message, requestId }, 500);
    }
    // Pub/Sub's admin API failing to make or read the worker's subscription at registration: transient,
    // so the contract's retryable 503, not an unhandled 500. (A subscription with another filter, or left
    // on a deleted topic — kind conflict — needs an operator, and stays a logged 500.)
    if (err instanceof SubscriptionError && err.kind === 'unavailable') {
      log.warn(`${c.req.method} ${c.req.path}: worker subscription unavailable`, {
        requestId,
        error: err,
        cause: err.cause,
      });
      return c.json({ error: 'unavailable', message: 'retry shortly' }, 503, { 'Retry-After': '1' });
    }
    // A reclaim's proxy whose stored document no longer fits: the API's own routes' answer for it.
    if (err instanceof InvalidStoredProxy) {
      const e = storedProxyInvalid(err);
      log.error(`${c.req.method} ${c.req.path}: ${e.code}`, { requestId, error: err });
      return c.json(e.body(), e.status);
    }
    // The proxy store (a reclaim looks its proxy up) down: retryable, like the API's own routes answer it.
    if (err instanceof StoreError && err.kind === 'unavailable') {
      log.warn(`${c.req.method} ${c.req.path}: proxy store unavailable`, { requestId, error: err });
      return c.json({ error: 'unavailable', message: 'retry shortly' }, 503, { 'Retry-After': '1' });
    }
    log.error(`unhandled error in ${c.req.method} ${c.req.path}`, {
      requestId,
      error: err,
      cause: (err as { cause?: unknown }).cause,
    });
    return c.json({ error: 'internal', message: 'internal error', requestId }, 500);
  };
