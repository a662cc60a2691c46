// The orphan GC rule (operator seed §8): the crash-safety net for the one gap reconcile cannot close
// alone — a crash after the provider Create and before the status write that records the instance,
// followed by the proxy's deletion (reconcileDelete finds no recorded instance and removes the document).
// Destructive, so every condition must hold; anything uncertain keeps the instance.
import { isInstanceNamedFor, uidKey } from '../instance-name.js';

/** Seed §8: not mid-create. */
export const DefaultMinAgeMs = 10 * 60_000;

/** What a provider's listByTag reports about one instance (the Provider port's OwnedInstance fits). */
export interface ListedInstance {
  providerId: string;
  /** The ownership label's value (proxyplane-uid): which proxy the instance belongs to; null when absent. */
  uid: string | null;
  createdAt: Date | null;
}

export type KeepReason = 'no_ownership_label' | 'not_its_name' | 'too_young' | 'unknown_age' | 'live';

export type OrphanVerdict<I extends ListedInstance = ListedInstance> =
  | { instance: I; delete: true; uid: string; ageMs: number }
  | { instance: I; delete: false; keep: KeepReason };

/**
 * `liveUids` must be the complete set of proxies, including those being deleted (their own deletion owns
 * their instance; GC racing it would double-delete). The caller must skip the sweep entirely when that
 * list could not be read — never pass a partial set.
 *
 * `now` should be the time the live set was read, not a later one: an instance created after that read
 * (whose proxy the set may miss) then has a negative age and is kept, however long the sweep takes.
 */
export function classifyInstances<I extends ListedInstance>(
  instances: readonly I[],
  liveUids: ReadonlySet<string>,
  now: Date,
  minAgeMs: number = DefaultMinAgeMs,
): OrphanVerdict<I>[] {
  // Compared as uidKey makes them (instance-name.ts): a proxy whose stored uid a console edit put in
  // capitals, or mixed case, still holds the instance labelled with it in lower case.
  const live = new Set([...liveUids].map(uidKey));
  return instances.map((instance): OrphanVerdict<I> => {
    const uid = instance.uid;
    if (!uid) return { instance, delete: false, keep: 'no_ownership_label' };
    // The labels alone are no proof the plane made it ("create similar" and machine images copy them,
    // anyone can set them); the name its uid gives it is. Before the live check: a clone of a live
    // proxy's VM is not one of the live proxies' instances that sweepRefusal weighs orphans against.
    if (!isInstanceNamedFor(instance.providerId, uid))
      return { instance, delete: false, keep: 'not_its_name' };
    // Before its age: a live proxy's instance counts as live however young (sweepRefusal weighs orphans
    // against them — after a rollout most of a small fleet is younger than MinAge).
    if (live.has(uidKey(uid))) return { instance, delete: false, keep: 'live' };
    const created = instance.createdAt?.getTime();
    // An unparseable creationTimestamp is an Invalid Date: NaN must never read as "old enough".
    if (created === undefined || !Number.isFinite(created)) {
      return { instance, delete: false, keep: 'unknown_age' };
    }
    const ageMs = now.getTime() - created;
    if (!(ageMs >= minAgeMs)) return { instance, delete: false, keep: 'too_young' };
    return { instance, delete: true, uid, ageMs };
  });
}

/** The live set as sweepRefusal weighs it: every proxy's uid (what classifyInstances protects), and which of
 *  them are managed — the only ones that can have an instance the listing missed (an external proxy never
 *  has one). */
export interface LiveSet {
  uids: ReadonlySet<string>;
  managed: ReadonlySet<string>;
}

/** Why a sweep deletes nothing at all: refused (its live set may be wrong), or deferred (its listing missed
 *  part of the fleet, and a complete one might show enough live instances: a complete one decides). */
export interface SweepHold {
  kind: 'refused' | 'deferred';
  reason: string;
}

/**
 * Why a sweep deletes nothing at all (null: it may delete its orphans). Orphans come from a rare crash —
 * between a create and the status write that records it, followed by the proxy's deletion — so many at
 * once more likely mean a live set that is readable but wrong: the function reading another project's or
 * a freshly restored database, a collection emptied by hand. A budget that only capped each sweep slowed
 * such a sweep down without stopping it (the next sweep deleted the next batch of live VMs), so past
 * either bound it deletes none:
 * - more orphans than `maxDeletions` (GC_MAX_DELETIONS_PER_SWEEP) across every provider: refused — what the
 *   listing missed could only add orphans;
 * - two or more orphans, and more of them than instances of live proxies (of any age): a fleet the live
 *   set mostly does not know. One orphan alone is always a crash's (a sole proxy deleted after it).
 *
 * When the listing missed part of the fleet (`unseen`: zones that did not answer, providers not listed),
 * the live instances there were not counted — but they can only be instances of managed proxies in
 * `live` (the live set the verdicts were classified against) whose instance the listing did not see, one
 * each: an external proxy has none. Only
 * when those could bring the live instances up to the orphans is the second bound deferred to a sweep that
 * lists everything (an unreachable zone holding most of the fleet is no sign of a wrong live set). When
 * even they could not — an empty database (or nearly), with any zone of the project down — it is refused
 * as with a complete listing: the missed zone is not what to fix. A wrong live set that is not small (a
 * database restored from an old export, whose proxies' VMs are gone and so count as unseen) can still
 * defer while a zone is down: nothing is deleted and the tick fails all the same; telling it apart needs
 * each live proxy's recorded zone, which the live set does not read.
 */
export function sweepRefusal(
  verdicts: readonly OrphanVerdict[],
  maxDeletions: number,
  live: LiveSet,
  unseen: readonly string[] = [],
): SweepHold | null {
  let orphans = 0;
  let liveSeen = 0;
  const seen = new Set<string>();
  for (const v of verdicts) {
    if (v.delete) orphans++;
    else if (v.keep === 'live') {
      liveSeen++;
      // A 'live' verdict has a uid (classifyInstances keeps an unlabelled instance as no_ownership_label).
      if (v.instance.uid) seen.add(uidKey(v.instance.uid));
    }
  }
  if (orphans > maxDeletions)
    return {
      kind: 'refused',
      reason: `${orphans} orphans at once, more than GC_MAX_DELETIONS_PER_SWEEP (${maxDeletions})`,
    };
  if (!(orphans >= 2 && orphans > liveSeen)) return null;
  // Each managed live proxy (as the live set counts them: documents) whose instance the listing did not see.
  let unseenLive = 0;
  for (const uid of live.managed) if (!seen.has(uidKey(uid))) unseenLive++;
  const against = `${orphans} orphans against ${liveSeen} instances of live proxies seen, of ${live.uids.size} live proxies`;
  if (unseen.length === 0) return { kind: 'refused', reason: `${against}: the live set may be wrong` };
  if (orphans <= liveSeen + unseenLive)
    return {
      kind: 'deferred',
      reason: `${against} (${unseenLive} managed with no instance seen), but the listing missed ${unseen.join(', ')}: kept for a sweep that lists everything`,
    };
  return {
    kind: 'refused',
    reason: `${against} (${unseenLive} managed with no instance seen): the live set may be wrong — even with an instance of each of those in what the listing missed (${unseen.join(', ')}), the live instances are fewer than the orphans`,
  };
}

/** How many instances were kept for each reason (one log line per sweep instead of one per instance). */
export function keepReasons(verdicts: readonly OrphanVerdict[]): Partial<Record<KeepReason, number>> {
  const out: Partial<Record<KeepReason, number>> = {};
  for (const v of verdicts) if (!v.delete) out[v.keep] = (out[v.keep] ?? 0) + 1;
  return out;
}
