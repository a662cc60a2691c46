// One provider's part of a GC sweep (seed §8), in two steps so that the handler sees every provider's
// orphans before any is deleted (orphans.ts sweepRefusal): list what carries our labels and classify it
// against the live set (pure), then delete the orphans one by one. Nothing here throws: a provider that
// cannot be listed is reported so that the sweep goes on with the next one, and a failed delete is retried
// by the next sweep.
import { withDeadline } from '../../../shared/src/adapters/deadline.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { classifyInstances, keepReasons, type OrphanVerdict } from '../../../shared/src/domain/gc/orphans.js';
import { isListingStopped, type OwnedInstance, type Provider } from '../../../shared/src/ports/provider.js';

export interface SweepLimits {
  now: Date;
  minAgeMs: number;
  /** Whether the listing's budget is spent: a listing still paging then stops (a partial one is none). */
  stopListing?: () => boolean;
}

export interface ProviderSweep {
  provider: string;
  listed: boolean;
  deleted: number;
  kept: number;
  /** Orphans left for the next sweep: still being created, all of them in a refused sweep, or those the
   *  sweep had no time left for (outOfTime). */
  deferred: number;
  /** Orphans not attempted: too little of the sweep's time was left (deleteOrphans `timeLeft`). */
  outOfTime: number;
  deleteFailures: number;
  unreachable: string[];
}

/** What listing one provider found, classified; its orphans are deleted by deleteOrphans. */
export interface ProviderListing {
  provider: Provider;
  result: ProviderSweep;
  verdicts: OrphanVerdict<OwnedInstance>[];
}

/** Zone-qualified provider ids (gce: zones/<zone>/instances/<name>) name their zone; others give null. */
const zoneOf = (providerId: string): string | null => /^zones\/([^/]+)\//.exec(providerId)?.[1] ?? null;

export async function listProvider(
  provider: Provider,
  live: ReadonlySet<string>,
  limits: SweepLimits,
  log: Logger,
): Promise<ProviderListing> {
  const result: ProviderSweep = {
    provider: provider.name,
    listed: false,
    deleted: 0,
    kept: 0,
    deferred: 0,
    outOfTime: 0,
    deleteFailures: 0,
    unreachable: [],
  };
  let instances: OwnedInstance[];
  // Not begun at all past the budget: a listing asks `stop` only before its later pages (ListOptions), and
  // its first, up to ~2 minutes of retries under a slow Compute API, would then run into the timeout — the
  // claim and the live set read slowly by a degraded Firestore, or an earlier provider's listing, spent it.
  if (limits.stopListing?.()) {
    log.error('gc ran out of its budget listing instances; sweeping the next provider', {
      provider: provider.name,
      error: 'no listing begun: its budget was spent before it',
    });
    return { provider, result, verdicts: [] };
  }
  try {
    const listing = await provider.listByTag({ stop: limits.stopListing });
    instances = listing.instances;
    result.unreachable = listing.unreachable;
  } catch (err) {
    const what = isListingStopped(err)
      ? 'ran out of its budget listing instances'
      : 'could not list instances';
    log.error(`gc ${what}; sweeping the next provider`, { provider: provider.name, error: err });
    return { provider, result, verdicts: [] };
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
  result.kept = verdicts.filter((v) => !v.delete).length;
  log.info('gc listed provider', {
    provider: provider.name,
    listed: instances.length,
    orphans: verdicts.length - result.kept,
    kept: keepReasons(verdicts),
  });
  return { provider, result, verdicts };
}

type Orphan = Extract<OrphanVerdict<OwnedInstance>, { delete: true }>;

/** The fields every line about one orphan carries. */
export const orphanFields = (provider: string, v: Orphan) => ({
  provider,
  zone: zoneOf(v.instance.providerId),
  providerId: v.instance.providerId,
  uid: v.uid,
  proxyName: v.instance.proxyName,
  createdAt: v.instance.createdAt?.toISOString() ?? null,
  ageSeconds: Math.floor(v.ageMs / 1000),
});

/** An orphan refusing deletion as not ready for this long after its creation is not being created. */
export const NOT_READY_FOR_LONG_MS = 60 * 60_000;

/** Less of the sweep's time left than this, no orphan is begun: a lookup and a delete take a second or two on
 *  a healthy API, and one begun with less would only be given up at the deadline, as a failure. */
export const ORPHAN_MIN_LEFT_MS = 10_000;

/** A call waited on for at most `ms`, the sweep's time left (unbounded: Infinity). A call given up runs on
 *  (a delete is idempotent: the next sweep lists the instance again, or not), its answer dropped. */
const within = <T>(call: Promise<T>, ms: number): Promise<T> =>
  Number.isFinite(ms)
    ? withDeadline(
        call,
        ms,
        () => new Error(`no answer within the ${Math.round(ms / 1000)} s the sweep had left`),
      )
    : call;

export async function deleteOrphans(
  listing: ProviderListing,
  log: Logger,
  /**
   * Whether a proxy document records the instance in its status (ProxyStore.recordsInstance): that proxy's
   * passes own it, whatever uid its label or the document now carries — a uid edited by hand in the console
   * keeps serving on the instance reconcile still reads, and the uid rule alone deleted it. The rule the
   * unrecorded-instance request keeps too. One indexed lookup per orphan, which are rare.
   */
  recorded: (providerId: string) => Promise<boolean>,
  /**
   * How long the sweep may still wait, in ms (Infinity: unbounded): each orphan's lookup and delete — each
   * up to ~2 minutes of retries while Compute is slow — are given up past it (a failure, the next sweep
   * retries), and with less than ORPHAN_MIN_LEFT_MS left the orphans are not attempted (deferred, counted
   * outOfTime). A sweep the function's timeout cuts off records nothing and logs no failure.
   */
  timeLeft: () => number = () => Infinity,
): Promise<void> {
  const { provider, result } = listing;
  /** Left for the next sweep, not attempted: too little time is left. */
  const notBegun = () => {
    result.deferred++;
    result.outOfTime++;
  };
  for (const v of listing.verdicts) {
    if (!v.delete) continue;
    if (timeLeft() < ORPHAN_MIN_LEFT_MS) {
      notBegun();
      continue;
    }
    // Each branch logs the orphan's fields once (spread from the call, which the docs' log scan reads).
    let isRecorded: boolean;
    try {
      isRecorded = await within(recorded(v.instance.providerId), timeLeft());
    } catch (err) {
      // Never guess: not known whether a document records it, it is kept for the next sweep — as a failure
      // (the tick fails, and pages if it goes on): a lookup that keeps failing kept every orphan for ever.
      result.deleteFailures++;
      log.error(
        'gc could not tell whether a proxy records an orphaned instance; kept, the next sweep asks again',
        {
          ...orphanFields(provider.name, v),
          error: err,
        },
      );
      continue;
    }
    // Once more after the lookup (it may have been slow): a delete begun with less left is only given up.
    const left = timeLeft();
    if (!isRecorded && left < ORPHAN_MIN_LEFT_MS) {
      notBegun();
      continue;
    }
    try {
      if (isRecorded) {
        result.kept++;
        log.warn(
          'gc: an instance labelled for no live proxy is recorded by one; kept (its uid was edited?)',
          orphanFields(provider.name, v),
        );
        continue;
      }
      if ((await within(provider.delete(v.instance.providerId), left)) === 'not-ready') {
        // Still being created (GCE refuses the delete until its insert Operation is DONE): nothing was
        // deleted, and the orphan waits for the next sweep, which lists it again. Refused that way an hour
        // after its creation, no insert is what holds it (one stuck, or another operation): a failure, so
        // that the tick fails and pages if it goes on, not a warning every sweep while it runs and bills.
        if (v.ageMs >= NOT_READY_FOR_LONG_MS) {
          result.deleteFailures++;
          log.error('gc: an orphaned instance still refuses deletion as not ready; the next sweep retries', {
            ...orphanFields(provider.name, v),
          });
        } else {
          result.deferred++;
          log.warn(
            'gc: an orphaned instance is still being created; the next sweep deletes it',
            orphanFields(provider.name, v),
          );
        }
        continue;
      }
      result.deleted++;
      // Loud on purpose: the safety net fired, so a reconcile crashed between create and its status write.
      // `event` is what the log-based metric and its alert count (terraform/monitoring.tf).
      log.warn('gc deleted an orphaned instance', { event: 'gc.deleted', ...orphanFields(provider.name, v) });
    } catch (err) {
      result.deleteFailures++;
      log.error('gc could not delete an orphaned instance; the next sweep retries', {
        ...orphanFields(provider.name, v),
        error: err,
      });
    }
  }
}
