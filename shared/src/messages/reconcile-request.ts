import { z } from 'zod';
import { ProxyName } from '../domain/proxy.js';

/** Why a pass is asked for (for logs, and whether its cloud-init may come from the cache). */
export const ReconcileReason = z.enum([
  'created',
  'spec-changed',
  'delete-requested',
  'requeue',
  'health-transition',
  'secret-rotated',
  'manual',
]);
export type ReconcileReason = z.infer<typeof ReconcileReason>;

/** Payload of the reconcile-requests topic, as every publisher sends it: which proxy, and why. */
export const ReconcileRequest = z.object({ proxy: ProxyName, reason: ReconcileReason }).strict();
export type ReconcileRequest = z.infer<typeof ReconcileRequest>;

/**
 * The same payload as the reconcile function reads it. Every reason asks for the same pass, so a reason
 * this function does not know — a newer publisher's, while a deployment rolls out function by function —
 * is still a request for a pass, never poison (contract seed §7: a new enum value is handled as
 * UNSPECIFIED). Dropping it would leave the change it announces to the requeue sweep's slow recovery.
 */
export const ReceivedReconcileRequest = z
  .object({ proxy: ProxyName, reason: z.string().min(1).max(64) })
  .strict();
export type ReceivedReconcileRequest = z.infer<typeof ReceivedReconcileRequest>;

export const isKnownReconcileReason = (reason: string): reason is ReconcileReason =>
  ReconcileReason.safeParse(reason).success;
