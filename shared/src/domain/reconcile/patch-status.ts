// The pure half of the seed's patchStatusIfChanged (§2): finish the staged status and tell whether it
// differs from what was read. The handler does the one conditional write when it does.
import { computePhase } from '../phase.js';
import type { ProxyResource, ProxyStatus } from '../proxy.js';
import { canonicalJson } from '../spec-hash.js';
import type { Requeue } from './types.js';

/**
 * How far on a status stores its due time when its delivery carries on by itself: RequeueNow (the next pass
 * runs in the same invocation, or a published hand-off does), a write before a throw (Pub/Sub redelivers,
 * 10 s and up). That due time is the safety net should the delivery be lost (a dead letter), so the
 * requeue sweep's copy must not come while it still works: the sweep publishes what falls due within its
 * next poll (1 s) — stored as "now", a proxy was published again while the same delivery's next pass ran
 * (1.5–3 s with a Secret Manager read and an insert), and the duplicate created too (a 409, a read, a lost
 * write). A minute is past a pass that goes well and Pub/Sub's first redeliveries; a slower pass costs at
 * worst that duplicate, and a lost delivery is taken up a minute later.
 */
export const SAFETY_NET_MS = 60_000;

/** RequeueAfter becomes a stored due time; RequeueNow stores one SAFETY_NET_MS on, should the requeue be lost. */
export function nextReconcileAt(requeue: Requeue, now: Date): Date | null {
  switch (requeue.kind) {
    case 'after':
      return new Date(now.getTime() + requeue.ms);
    case 'now':
      return new Date(now.getTime() + SAFETY_NET_MS);
    default:
      return null;
  }
}

/**
 * `observed` false: the pass failed before it acted on the spec (a write in passing, failure.ts), so the
 * status does not claim the generation was observed — the API re-publishes for a proxy still behind, and
 * the requeue sweep asks again for one whose request was lost (drift.ts awaitsPass).
 */
export function finalizeStatus(
  proxy: ProxyResource,
  staged: ProxyStatus,
  requeue: Requeue,
  now: Date,
  observed = true,
): ProxyStatus {
  const status = {
    ...staged,
    observedGeneration: observed ? proxy.generation : proxy.status.observedGeneration,
    nextReconcileAt: nextReconcileAt(requeue, now),
  };
  return { ...status, phase: computePhase(proxy, status) };
}

export const statusChanged = (before: ProxyStatus, after: ProxyStatus): boolean =>
  canonicalJson(before) !== canonicalJson(after);
