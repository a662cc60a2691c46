// A delete the provider refused for now, because the instance is still being created (Provider.delete
// 'not-ready': GCE answers resourceNotReady until the insert Operation is DONE). Nothing was done; the
// arm's requeue (DeletionPoll) asks again, and the pass after the creation finishes has it taken. The arm
// staged its Provisioned condition as if the delete were under way ("deleting the instance"); the status
// says what is happening instead. For a proxy being deleted, with a reason of its own
// (DeletionWaitingForCreation); for a replacement, whose reason (Replacing, CloudInitError) other rules
// read, in the message only. Either way the status is the same on every refused pass: no write per poll.
import { ConditionType, ProvisionedReason, type ProxyResource } from '../proxy.js';
import { findCondition, setProvisioned } from './conditions.js';
import type { Plan } from './types.js';

export const DELETION_WAITS_FOR_CREATION = "waiting for the instance's creation to finish before deleting it";

export function deleteNotReady(proxy: ProxyResource, plan: Plan, now: Date): Plan {
  const staged = findCondition(plan.status, ConditionType.Provisioned);
  const branch = `${plan.branch}/not-ready`;
  if (proxy.deletionRequestedAt) {
    const status = setProvisioned(
      plan.status,
      false,
      ProvisionedReason.DeletionWaitingForCreation,
      DELETION_WAITS_FOR_CREATION,
      proxy.generation,
      now,
    );
    return { ...plan, branch, status };
  }
  if (!staged) return { ...plan, branch };
  const status = setProvisioned(
    plan.status,
    staged.status === 'True',
    staged.reason,
    `${staged.message} once its creation has finished`,
    proxy.generation,
    now,
  );
  return { ...plan, branch, status };
}
