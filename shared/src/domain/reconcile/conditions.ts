// Status staging helpers, the port of meta.SetStatusCondition and the seed's setProvisioned /
// applyHealth (status.go). Pure and immutable: each returns a new status.
import { type Condition, ConditionType, type ProxyStatus } from '../proxy.js';
import type { HealthObservation, HealthVerdict, InstanceObservation } from './types.js';

/** Messages land in Firestore and the console; keep them bounded. */
const MAX_MESSAGE = 512;

export interface ConditionInput {
  type: string;
  status: Condition['status'];
  reason: string;
  message: string;
}

export const findCondition = (status: ProxyStatus, type: string): Condition | undefined =>
  status.conditions.find((c) => c.type === type);

/**
 * Sets a condition; lastTransitionTime moves only when the status flips (as in apimachinery), so
 * re-asserting an unchanged condition leaves the status equal and costs no write.
 */
export function setCondition(
  status: ProxyStatus,
  input: ConditionInput,
  generation: number,
  now: Date,
): ProxyStatus {
  const prior = findCondition(status, input.type);
  const next: Condition = {
    ...input,
    message: input.message.slice(0, MAX_MESSAGE),
    lastTransitionTime: prior && prior.status === input.status ? prior.lastTransitionTime : now,
    observedGeneration: generation,
  };
  const conditions = prior
    ? status.conditions.map((c) => (c.type === input.type ? next : c))
    : [...status.conditions, next];
  return { ...status, conditions };
}

export const removeCondition = (status: ProxyStatus, type: string): ProxyStatus => ({
  ...status,
  conditions: status.conditions.filter((c) => c.type !== type),
});

export function setProvisioned(
  status: ProxyStatus,
  value: boolean,
  reason: string,
  message: string,
  generation: number,
  now: Date,
): ProxyStatus {
  return setCondition(
    status,
    { type: ConditionType.Provisioned, status: value ? 'True' : 'False', reason, message },
    generation,
    now,
  );
}

/**
 * The instance is gone or being replaced: no address to offer, no credentials version it serves, and
 * health state starts fresh with the next instance (seed §6: a replaced instance starts with fresh counters).
 */
export function clearInstance(status: ProxyStatus, opts: { keepProviderId: boolean }): ProxyStatus {
  const { servedCredentials: _served, ...rest } = clearHealth(status);
  return { ...rest, providerId: opts.keepProviderId ? status.providerId : null, ip: null };
}

/**
 * `status` without the address and verdict of an instance the pass saw stopped, booting or gone (its
 * providerId kept unless gone), or running at another address than the status shows (addressMoved);
 * null when it saw the instance running there, or did not look. GCE releases a stopped or deleted VM's
 * ephemeral address, another project's VM may get it, and the probe dials status.ip with the proxy's
 * credentials: whatever a pass then writes, that address is not in it.
 */
export function withoutInstanceSeenDown(
  status: ProxyStatus,
  seen: InstanceObservation | null | undefined,
): ProxyStatus | null {
  if (!seen || seen.kind === 'error') return null;
  if (seen.kind === 'found' && seen.instance.state === 'Running' && !addressMoved(status, seen.instance))
    return null;
  return clearInstance(status, { keepProviderId: seen.kind === 'found' });
}

/**
 * A running instance at another address than the status shows: it was stopped and started again between
 * two passes (GCE gives a restarted VM a new ephemeral address; one seen stopped is deleted and replaced,
 * managed.ts, but drift passes are minutes apart). The status's address was released with the stop.
 */
export const addressMoved = (status: ProxyStatus, inst: { ip: string | null }): boolean =>
  !!status.ip && !!inst.ip && status.ip !== inst.ip;

/** Drops what the probe said about the instance the status described: it says nothing about another one. */
export const clearHealth = (status: ProxyStatus): ProxyStatus =>
  withUnreachableRoutes(
    { ...removeCondition(status, ConditionType.Healthy), latencyMillis: null, lastHealthCheckTime: null },
    [],
  );

/** The routes the proxy is left out of (TARGET tier, docs/health.md): stored only when there are any, so
 *  a status without them reads, compares and writes as it did before the field. */
function withUnreachableRoutes(status: ProxyStatus, routes: readonly string[]): ProxyStatus {
  const { unreachableRoutes: _old, ...rest } = status;
  return routes.length > 0 ? { ...rest, unreachableRoutes: [...routes] } : rest;
}

/**
 * The probe's verdict when its state is about `instance` (the key of the status being staged,
 * domain/health/instance-key.ts); null when it is about another instance or has no verdict yet.
 */
export const verdictFor = (health: HealthObservation | null, instance: string): HealthVerdict | null =>
  health && instance !== '' && health.instance === instance ? health.verdict : null;

/**
 * The seed's applyHealth: stages the probe's verdict. null (no verdict about this instance) leaves the
 * health part of the status as it is: the probe may simply not have looked at it again.
 */
export function applyHealth(
  status: ProxyStatus,
  verdict: HealthVerdict | null,
  generation: number,
  now: Date,
): ProxyStatus {
  if (!verdict) return status;
  const staged = setCondition(
    status,
    {
      type: ConditionType.Healthy,
      status: verdict.healthy ? 'True' : 'False',
      reason: verdict.reason,
      message: verdict.message,
    },
    generation,
    now,
  );
  return withUnreachableRoutes(
    {
      ...staged,
      latencyMillis: verdict.latencyMillis,
      lastHealthCheckTime: verdict.checkedAt ?? status.lastHealthCheckTime,
    },
    verdict.unreachableRoutes,
  );
}
