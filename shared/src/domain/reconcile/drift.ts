// DriftPoll without writes (seed §3: Running → RequeueAfter DriftPoll). A steady proxy stores no due time
// (nextReconcileAt stays null, so its status never changes and costs no write); instead the requeue sweep
// re-publishes it on a fixed slot inside every DriftPoll period, derived from its UID so the fleet is
// spread evenly over the period rather than bunched at the tick.
import type { ProxyResource } from '../proxy.js';
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

/** The proxy's offset inside each DriftPoll period: stable per UID, uniform over the period. */
export function driftOffsetMs(uid: string, driftPollMs: number): number {
  return Number(BigInt(`0x${fnv1a64(uid)}`) % BigInt(driftPollMs));
}

/** The proxy's drift slots in [from, to): one per DriftPoll period. */
export function driftSlots(uid: string, driftPollMs: number, from: Date, to: Date): Date[] {
  const offset = driftOffsetMs(uid, driftPollMs);
  const start = from.getTime();
  let slot = Math.floor((start - offset) / driftPollMs) * driftPollMs + offset;
  if (slot < start) slot += driftPollMs;
  const out: Date[] = [];
  for (; slot < to.getTime(); slot += driftPollMs) out.push(new Date(slot));
  return out;
}
