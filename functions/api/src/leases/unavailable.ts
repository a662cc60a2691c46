// A lease request the lease store could not serve (503 unavailable): counted on /metrics
// (proxyplane_lease_requests_total{outcome="unavailable"}) and logged as `leases.store_unavailable`, the
// line the log-based metric proxyplane/lease_store_unavailable counts and its alert reads (terraform/
// monitoring.tf, docs/operations.md § Lease store unavailable). One line per 503, like the app's other
// 5xx (recover() logs each at ERROR too, with the request id): the operation, the store's reason and
// Firestore's status code — no lease id, token or crawler. The code is there because nothing else logs
// it: recover() describes the LeaseStoreError, not the Firestore error under it.
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import type { LeaseStoreError } from '../../../../shared/src/ports/lease-store.js';
import type { StoreError } from '../../../../shared/src/ports/proxy-store.js';
import type { LeaseMetrics, LeaseOp } from './metrics.js';

export function storeUnavailable(
  deps: { metrics: LeaseMetrics; log: Logger },
  op: LeaseOp,
  err: LeaseStoreError | StoreError,
): void {
  deps.metrics.leaseRequest(op, 'unavailable');
  // WARNING, not ERROR: each one is retried by its crawler after Retry-After; what needs a person is a
  // rate that lasts, and that is the alert's judgement, not this line's.
  deps.log.warn('lease store unavailable: answered 503', {
    event: 'leases.store_unavailable',
    op,
    reason: err.kind,
    code: grpcCode(err.cause),
  });
}

/** Firestore's gRPC status code of the failure under the store's error (null for contention, not_ready). */
function grpcCode(cause: unknown): number | null {
  const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  return typeof code === 'number' ? code : null;
}
