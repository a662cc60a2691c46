// DriftPoll without writes (seed §3: Running → RequeueAfter DriftPoll). A steady proxy stores no due time
// (nextReconcileAt stays null, so its status never changes and costs no write); instead the requeue sweep
// re-publishes it on a fixed slot inside every DriftPoll period, derived from its UID so the fleet is
// spread evenly over the period rather than bunched at the tick.
import { ConditionType, type ProxyResource } from '../proxy.js';
import { fnv1a64 } from '../spec-hash.js';

const STEADY_PHASES = new Set(['Provisioned', 'Ready', 'Unhealthy']);

/** A managed proxy whose instance is Running and which has nothing else scheduled. */
export function isDriftPolled(p: ProxyResource): boolean {
  return (
    p.spec.mode === 'managed' &&
    !p.deletionRequestedAt &&
    p.status.nextReconcileAt === null &&
    p.status.providerId !== null &&
    STEADY_PHASES.has(p.status.phase)
  );
}

/**
 * A proxy that needs a pass and has nothing scheduled: no pass has gone through since its spec was edited
 * (observedGeneration behind) or since its deletion was requested (any pass after the request stores phase
 * Deleting). Its request was lost — the API's publish failed after its write, or Pub/Sub dead-lettered it
 * after its delivery attempts — where the seed's workqueue never drops one (operator seed §1: error backoff
 * without end). A proxy with a due time is the due list's; a deletion that stays Deleting with nothing due
 * is latched (its provider is missing) and waits for an operator.
 */
export function awaitsPass(p: ProxyResource): boolean {
  if (p.status.nextReconcileAt !== null) return false;
  if (p.deletionRequestedAt) return p.status.phase !== 'Deleting';
  return p.status.observedGeneration < p.generation;
}

/**
 * When the pass a proxy awaits was asked for, which its republishing backs off from (awaitsPassSlotDue): its
 * deletion request, or its creation while no pass has seen it. null for a spec edit of a proxy a pass has
 * seen: an edit records no time of its own, and counted from the creation, an external or Failed proxy
 * weeks old whose edit's request was lost was asked again every 16th DriftPoll only (80 min at 5) — leases
 * handing out its old host with its new credentials meanwhile. Such a proxy is published at every slot, as
 * a steady managed one is drift-polled: its passes cost a Compute outage no more than the steady fleet's.
 */
export function awaitsPassSince(p: ProxyResource): Date | null {
  if (p.deletionRequestedAt) return p.deletionRequestedAt;
  return p.status.observedGeneration === 0 ? p.createdAt : null;
}

/** No pass for a proxy awaiting one before a DriftPoll after its creation or deletion request: the request
 *  those sent is given that long to land first (a spec edit records no time: its edit may be passed again). */
export function awaitsPassNotBefore(p: ProxyResource, driftPollMs: number): Date {
  return new Date((p.deletionRequestedAt ?? p.createdAt).getTime() + driftPollMs);
}

/** After this many DriftPolls an awaiting proxy is published once every this many. */
export const AWAITS_PASS_MAX_PERIODS = 16;

/**
 * Whether a proxy awaiting a pass since `since` is published at its drift slot `slot`: 1, 2, 4, 8 and 16
 * DriftPolls after the request, then every 16th. A proxy whose passes keep failing (a provider outage)
 * still awaits one, and each message published is retried by Pub/Sub for over an hour
 * (shared/topology/pubsub.json): a new one every DriftPoll would multiply the passes against the failing
 * provider and dead-letter one message per DriftPoll. Backing off keeps it near one message in flight.
 */
export function awaitsPassSlotDue(since: Date, slot: Date, driftPollMs: number): boolean {
  const n = Math.floor((slot.getTime() - since.getTime()) / driftPollMs);
  if (n < 1) return false;
  return n >= AWAITS_PASS_MAX_PERIODS ? n % AWAITS_PASS_MAX_PERIODS === 0 : (n & (n - 1)) === 0;
}

/** The proxy's offset inside each DriftPoll period: stable per UID, uniform over the period. */
export function driftOffsetMs(uid: string, driftPollMs: number): number {
  return Number(BigInt(`0x${fnv1a64(uid)}`) % BigInt(driftPollMs));
}

/**
 * The seed's DriftPoll counts from the pass that saw the instance Running: no drift poll comes sooner
 * than DriftPoll after the Provisioned condition last turned True.
 */
export function driftNotBefore(p: ProxyResource, driftPollMs: number): Date | null {
  const c = p.status.conditions.find((x) => x.type === ConditionType.Provisioned);
  return c?.status === 'True' ? new Date(c.lastTransitionTime.getTime() + driftPollMs) : null;
}

/** The proxy's drift slots in [from, to), none before `notBefore`: one per DriftPoll period. */
export function driftSlots(
  uid: string,
  driftPollMs: number,
  from: Date,
  to: Date,
  notBefore: Date | null = null,
): Date[] {
  const offset = driftOffsetMs(uid, driftPollMs);
  const start = Math.max(from.getTime(), notBefore?.getTime() ?? 0);
  let slot = Math.floor((start - offset) / driftPollMs) * driftPollMs + offset;
  if (slot < start) slot += driftPollMs;
  const out: Date[] = [];
  for (; slot < to.getTime(); slot += driftPollMs) out.push(new Date(slot));
  return out;
}
