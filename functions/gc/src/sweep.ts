// One provider's part of a GC sweep (seed §8): list what carries our labels, classify it against the
// live set (pure), delete the orphans one by one. Nothing here throws: a provider that cannot be listed
// is reported so that the sweep goes on with the next one, and a failed delete is retried by the next sweep.
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { classifyInstances, keepReasons } from '../../../shared/src/domain/gc/orphans.js';
import type { OwnedInstance, Provider } from '../../../shared/src/ports/provider.js';

export interface SweepLimits {
  now: Date;
  minAgeMs: number;
  /** Deletions this sweep may still make (shared across providers); the rest wait for the next sweep. */
  budget: { remaining: number };
}

export interface ProviderSweep {
  provider: string;
  listed: boolean;
  deleted: number;
  kept: number;
  /** Orphans left for the next sweep: past the deletion budget, or still being created. */
  deferred: number;
  deleteFailures: number;
  unreachable: string[];
}

/** Zone-qualified provider ids (gce: zones/<zone>/instances/<name>) name their zone; others give null. */
const zoneOf = (providerId: string): string | null => /^zones\/([^/]+)\//.exec(providerId)?.[1] ?? null;

export async function sweepProvider(
  provider: Provider,
  live: ReadonlySet<string>,
  limits: SweepLimits,
  log: Logger,
): Promise<ProviderSweep> {
  const result: ProviderSweep = {
    provider: provider.name,
    listed: false,
    deleted: 0,
    kept: 0,
    deferred: 0,
    deleteFailures: 0,
    unreachable: [],
  };
  let instances: OwnedInstance[];
  try {
    const listing = await provider.listByTag();
    instances = listing.instances;
    result.unreachable = listing.unreachable;
  } catch (err) {
    log.error('gc could not list instances; sweeping the next provider', {
      provider: provider.name,
      error: err,
    });
    return result;
  }
  result.listed = true;
  if (result.unreachable.length > 0) {
    // Instances in those zones are simply not seen: nothing is deleted there this time.
    log.warn('gc: some zones did not answer; their instances wait for the next sweep', {
      provider: provider.name,
      zones: result.unreachable,
    });
  }

  const verdicts = classifyInstances(instances, live, limits.now, limits.minAgeMs);
  for (const v of verdicts) {
    if (!v.delete) {
      result.kept++;
      continue;
    }
    const fields = {
      provider: provider.name,
      zone: zoneOf(v.instance.providerId),
      providerId: v.instance.providerId,
      uid: v.uid,
      proxyName: v.instance.proxyName,
      createdAt: v.instance.createdAt?.toISOString() ?? null,
      ageSeconds: Math.floor(v.ageMs / 1000),
    };
    if (limits.budget.remaining <= 0) {
      result.deferred++;
      log.error('gc deletion budget spent: orphan kept until the next sweep', fields);
      continue;
    }
    limits.budget.remaining--;
    try {
      if ((await provider.delete(v.instance.providerId)) === 'not-ready') {
        // Still being created (GCE refuses the delete until its insert Operation is DONE): nothing was
        // deleted, so the budget is not spent, and the orphan waits for the next sweep, which lists it again.
        limits.budget.remaining++;
        result.deferred++;
        log.warn('gc: an orphaned instance is still being created; the next sweep deletes it', fields);
        continue;
      }
      result.deleted++;
      // Loud on purpose: the safety net fired, so a reconcile crashed between create and its status write.
      // `event` is what the log-based metric and its alert count (terraform/monitoring.tf).
      log.warn('gc deleted an orphaned instance', { event: 'gc.deleted', ...fields });
    } catch (err) {
      result.deleteFailures++;
      log.error('gc could not delete an orphaned instance; the next sweep retries', {
        ...fields,
        error: err,
      });
    }
  }
  log.info('gc swept provider', {
    provider: provider.name,
    listed: instances.length,
    deleted: result.deleted,
    kept: keepReasons(verdicts),
  });
  return result;
}
