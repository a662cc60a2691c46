// A delete the provider refused for now, because the instance is still being created (Provider.delete
// 'not-ready': GCE answers resourceNotReady until the insert Operation is DONE). Nothing was done; the arm's
// requeue (DeletionPoll) asks again — backed off as the creation goes on (held-poll.ts: GCE can hold one
// for long, waiting for capacity) — and the pass after the creation finishes has it taken. The arm staged
// its Provisioned condition as if the delete were under way ("deleting the instance"); the status says what
// is happening instead. For a proxy being deleted, with a reason of its own (DeletionWaitingForCreation);
// for a replacement, whose reason (Replacing, CloudInitError) other rules read, in the message only. Either
// way the condition is the same on every refused pass: only the due time is written again.
import { ConditionType, ProvisionedReason, type ProxyResource } from '../proxy.js';
import { findCondition, setProvisioned } from './conditions.js';
import { heldPollMs } from './held-poll.js';
import type { ObservedInstance, Plan } from './types.js';

export const DELETION_WAITS_FOR_CREATION = "waiting for the instance's creation to finish before deleting it";

/** `instance`: the one the refused delete was for, as the pass saw it (its creation time backs the poll off). */
export function deleteNotReady(
  proxy: ProxyResource,
  plan: Plan,
  now: Date,
  instance?: ObservedInstance,
): Plan {
  const branch = `${plan.branch}/not-ready`;
  const requeue = backedOff(plan.requeue, instance, now);
  const staged = findCondition(plan.status, ConditionType.Provisioned);
  if (proxy.deletionRequestedAt) {
    const status = setProvisioned(
      plan.status,
      false,
      ProvisionedReason.DeletionWaitingForCreation,
      DELETION_WAITS_FOR_CREATION,
      proxy.generation,
      now,
    );
    return { ...plan, branch, status, requeue };
  }
  if (!staged) return { ...plan, branch, requeue };
  const status = setProvisioned(
    plan.status,
    staged.status === 'True',
    staged.reason,
    `${staged.message} once its creation has finished`,
    proxy.generation,
    now,
  );
  return { ...plan, branch, status, requeue };
}

/**
 * The arm's requeue, waiting longer the longer the instance has been in creation (unknown: not at all).
 * Measured from its creation time: an older instance refused for a moment (GCE's own operation on it under
 * way) is asked again within a minute, not at once — a delete a minute late at most.
 */
function backedOff(
  requeue: Plan['requeue'],
  instance: ObservedInstance | undefined,
  now: Date,
): Plan['requeue'] {
  if (requeue.kind !== 'after' || !instance?.createdAt) return requeue;
  return {
    kind: 'after',
    ms: heldPollMs(requeue.ms, Math.max(0, now.getTime() - instance.createdAt.getTime())),
  };
}
