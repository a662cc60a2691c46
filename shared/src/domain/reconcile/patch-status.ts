// The pure half of the seed's patchStatusIfChanged (§2): finish the staged status and tell whether it
// differs from what was read. The handler does the one conditional write when it does.
import { computePhase } from '../phase.js';
import type { ProxyResource, ProxyStatus } from '../proxy.js';
import { canonicalJson } from '../spec-hash.js';
import type { Requeue } from './types.js';

/** RequeueAfter becomes a stored due time; RequeueNow stores "now" as a safety net should the requeue be lost. */
export function nextReconcileAt(requeue: Requeue, now: Date): Date | null {
  switch (requeue.kind) {
    case 'after':
      return new Date(now.getTime() + requeue.ms);
    case 'now':
      return now;
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
