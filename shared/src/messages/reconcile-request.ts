import { z } from 'zod';
import { ProxyName } from '../domain/proxy.js';

/** Why a pass is asked for (for logs, and whether its cloud-init may come from the cache). */
export const ReconcileReason = z.enum([
  'created',
  'spec-changed',
  'delete-requested',
  'requeue',
  // A steady proxy's drift slot (functions/requeue): the next slot polls again, so a failed pass is not
  // retried (functions/reconcile/src/handler.ts).
  'drift-poll',
  'health-transition',
  'secret-rotated',
  'manual',
  'unrecorded-instance',
]);
export type ReconcileReason = z.infer<typeof ReconcileReason>;

/**
 * An instance a reconcile delivery created whose proxy was deleted before any status recorded it, and
 * whose delete the provider refused because it was still being created (GCE: resourceNotReady until the
 * insert Operation is DONE). Nothing else knows of it but the orphan GC, so the request carries it:
 * Pub/Sub redelivers until the delete is taken (functions/reconcile/src/unrecorded-instance.ts).
 */
export const UnrecordedInstance = z
  .object({
    provider: z.string().min(1).max(63),
    providerId: z.string().min(1).max(256),
    uid: z.string().uuid(),
  })
  .strict();
export type UnrecordedInstance = z.infer<typeof UnrecordedInstance>;

const instanceGoesWithItsReason = {
  message: 'instance goes with reason unrecorded-instance, and only with it',
  path: ['instance'],
};

/**
 * Payload of the reconcile-requests topic, as every publisher sends it: which proxy, and why (for logs;
 * the pass is the same) — except reason `unrecorded-instance`, which carries the instance to delete and
 * runs no pass. Strict: a field our own publisher misspells fails its publish (and its tests), where the
 * receiving side (ReceivedReconcileRequest) would only drop it.
 */
export const ReconcileRequest = z
  .object({ proxy: ProxyName, reason: ReconcileReason, instance: UnrecordedInstance.optional() })
  .strict()
  .refine(
    (r) => (r.reason === 'unrecorded-instance') === (r.instance !== undefined),
    instanceGoesWithItsReason,
  );
export type ReconcileRequest = z.infer<typeof ReconcileRequest>;

/**
 * The same payload as the reconcile function reads it. Every reason asks for the same pass, so a reason
 * this function does not know — a newer publisher's, while a deployment rolls out function by function —
 * is still a request for a pass, never poison (contract seed §7: a new enum value is handled as
 * UNSPECIFIED). Dropping it would leave the change it announces to the requeue sweep's slow recovery.
 * Likewise a top-level field it does not know (a newer publisher's): dropped, and named in one WARNING
 * per delivery (decode-push.ts logUnknownFields), never poison — refused, an `unrecorded-instance`
 * request would leave its instance to the orphan GC. What it does know is held as strictly as ever:
 * `instance` goes with reason `unrecorded-instance` only, and `instance` itself is strict.
 */
export const ReceivedReconcileRequest = z
  .object({ proxy: ProxyName, reason: z.string().min(1).max(64), instance: UnrecordedInstance.optional() })
  .refine(
    (r) => (r.reason === 'unrecorded-instance') === (r.instance !== undefined),
    instanceGoesWithItsReason,
  );
export type ReceivedReconcileRequest = z.infer<typeof ReceivedReconcileRequest>;

export const isKnownReconcileReason = (reason: string): reason is ReconcileReason =>
  ReconcileReason.safeParse(reason).success;
