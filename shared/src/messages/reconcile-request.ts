import { z } from 'zod';
import { ProxyName } from '../domain/proxy.js';

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

/**
 * Payload of the reconcile-requests topic: which proxy, and why (for logs; the pass is the same) — except
 * reason `unrecorded-instance`, which carries the instance to delete and runs no pass.
 */
export const ReconcileRequest = z
  .object({
    proxy: ProxyName,
    reason: z.enum([
      'created',
      'spec-changed',
      'delete-requested',
      'requeue',
      'health-transition',
      'secret-rotated',
      'manual',
      'unrecorded-instance',
    ]),
    instance: UnrecordedInstance.optional(),
  })
  .strict()
  .refine((r) => (r.reason === 'unrecorded-instance') === (r.instance !== undefined), {
    message: 'instance goes with reason unrecorded-instance, and only with it',
    path: ['instance'],
  });
export type ReconcileRequest = z.infer<typeof ReconcileRequest>;
