// The reconcile and requeue functions' environment, parsed once by each entry point. The poll
// intervals keep the seed's names; tests and the local plane shorten them.
import { z } from 'zod';
import { BaseEnv, envNumber } from '../../../shared/src/config/env.js';
import { defaultPollIntervals, type PollIntervals } from '../../../shared/src/domain/reconcile/types.js';

const ms = envNumber(z.number().int().positive()).optional();

export const ReconcileEnv = BaseEnv.extend({
  RECONCILE_PROVISIONING_POLL_MS: ms,
  RECONCILE_DELETION_POLL_MS: ms,
  RECONCILE_DRIFT_POLL_MS: ms,
  RECONCILE_QUOTA_RETRY_MS: ms,
  /** How soon a proxy that found no replacement slot asks again (default 30 s). */
  RECONCILE_REPLACEMENT_RETRY_MS: ms,
  /**
   * At most this many managed proxies replaced for a stale spec hash at once, fleet-wide (a rotation of
   * a secret every proxy shares rolls through the fleet this many at a time). 0 = unlimited.
   */
  RECONCILE_MAX_REPLACING: envNumber(z.number().int().min(0).max(1000)).default(5),
  /** How long a resolved secret version / cloud-init stays cached for routine passes (0 = never). */
  RECONCILE_SECRET_CACHE_SECONDS: envNumber(z.number().int().min(0).max(3600)).default(300),
  /** Passes one delivery may run in-process (RequeueNow loops and conflict re-reads) before handing off. */
  RECONCILE_MAX_PASSES: envNumber(z.number().int().min(1).max(20)).default(6),
  GCE_NETWORK: z.string().min(1).optional(),
  GCE_SUBNETWORK: z.string().min(1).optional(),
  /** The proxy VMs' service account (it may read the credentials secrets). */
  GCE_SERVICE_ACCOUNT: z.string().email().optional(),
});
export type ReconcileConfig = z.infer<typeof ReconcileEnv>;

export class ReconcileConfigError extends Error {
  readonly kind = 'config';
}

/**
 * On GCP (no compute emulator) the VM's network and identity are not optional: without GCE_NETWORK an
 * instance lands in the default VPC, where the proxy firewall (terraform/network.tf) does not apply, and
 * without GCE_SERVICE_ACCOUNT it has no identity to read its credentials secret with. Refusing to start
 * turns a misnamed variable into a failed deploy instead of a fleet of unreachable VMs.
 */
export function loadReconcileConfig(env: NodeJS.ProcessEnv = process.env): ReconcileConfig {
  const config = ReconcileEnv.parse(env);
  if (!config.COMPUTE_EMULATOR_HOST) {
    const missing = (['GCE_NETWORK', 'GCE_SERVICE_ACCOUNT'] as const).filter((k) => !config[k]);
    if (missing.length > 0) {
      throw new ReconcileConfigError(
        `${missing.join(' and ')} must be set on GCP (terraform/functions.tf sets them), or COMPUTE_EMULATOR_HOST locally`,
      );
    }
  }
  return config;
}

export function pollIntervals(config: Partial<ReconcileConfig>): PollIntervals {
  return {
    ...defaultPollIntervals,
    ProvisioningPoll: config.RECONCILE_PROVISIONING_POLL_MS ?? defaultPollIntervals.ProvisioningPoll,
    DeletionPoll: config.RECONCILE_DELETION_POLL_MS ?? defaultPollIntervals.DeletionPoll,
    DriftPoll: config.RECONCILE_DRIFT_POLL_MS ?? defaultPollIntervals.DriftPoll,
    QuotaRetry: config.RECONCILE_QUOTA_RETRY_MS ?? defaultPollIntervals.QuotaRetry,
    ReplacementRetry: config.RECONCILE_REPLACEMENT_RETRY_MS ?? defaultPollIntervals.ReplacementRetry,
  };
}
