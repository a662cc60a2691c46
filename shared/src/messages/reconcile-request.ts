import { z } from 'zod';
import { ProxyName } from '../domain/proxy.js';

/** Payload of the reconcile-requests topic: which proxy, and why (for logs; the pass is the same). */
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
    ]),
  })
  .strict();
export type ReconcileRequest = z.infer<typeof ReconcileRequest>;
