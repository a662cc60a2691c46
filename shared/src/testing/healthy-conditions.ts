// Ready and probed healthy: the conditions lease selection and snapshots call healthy
// (shared/src/domain/leases/health.ts). Fixtures for tests and benchmarks that need healthy proxies.

import type { Condition } from '../domain/proxy.js';
import type { HealthVerdict } from '../domain/reconcile/types.js';

export const HEALTHY_CONDITIONS: Condition[] = [
  {
    type: 'Healthy',
    status: 'True',
    reason: 'ProbeSucceeded',
    message: '',
    lastTransitionTime: new Date(0),
    observedGeneration: 1,
  },
];

/** Any condition, as of `at`, at generation 1: for tables of statuses in tests. */
export const condition = (
  type: string,
  status: Condition['status'],
  reason: string,
  at: Date,
): Condition => ({
  type,
  status,
  reason,
  message: '',
  lastTransitionTime: at,
  observedGeneration: 1,
});

/** Provisioned=True since `since`: a running managed instance (its incarnation, for health keys). */
export const provisionedSince = (since: Date): Condition => ({
  type: 'Provisioned',
  status: 'True',
  reason: 'Created',
  message: '',
  lastTransitionTime: since,
  observedGeneration: 1,
});

/** The probe's verdict on a healthy proxy, checked at `at`: what reconcile turns into Healthy=True. */
export const healthyVerdict = (at: Date): HealthVerdict => ({
  healthy: true,
  latencyMillis: 12,
  checkedAt: at,
  reason: 'ProbeSucceeded',
  message: 'ok',
  unreachableRoutes: [],
});
