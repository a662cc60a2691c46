// The orphan GC rule (operator seed §8): the crash-safety net for the one gap reconcile cannot close
// alone — a crash after the provider Create and before the status write that records the instance.
// Destructive, so every condition must hold; anything uncertain keeps the instance.

export const OwnershipLabel = 'proxyplane-uid';
/** Seed §8: not mid-create. */
export const DefaultMinAgeMs = 10 * 60_000;

export interface ListedInstance {
  providerId: string;
  labels: Record<string, string>;
  createdAt: Date | null;
}

export type KeepReason = 'no_ownership_label' | 'too_young' | 'unknown_age' | 'live';

export interface OrphanVerdict {
  instance: ListedInstance;
  delete: boolean;
  /** Why it is kept; undefined when it is deleted. */
  keep?: KeepReason;
  uid?: string;
}

/**
 * `liveUids` must be the complete set of proxies, including those being deleted (their own deletion owns
 * their instance; GC racing it would double-delete). The caller must skip the sweep entirely when that
 * list could not be read — never pass a partial set.
 */
export function classifyInstances(
  instances: ListedInstance[],
  liveUids: ReadonlySet<string>,
  now: Date,
  minAgeMs: number = DefaultMinAgeMs,
): OrphanVerdict[] {
  return instances.map((instance) => {
    const uid = instance.labels[OwnershipLabel];
    if (!uid) return { instance, delete: false, keep: 'no_ownership_label' };
    if (!instance.createdAt) return { instance, delete: false, keep: 'unknown_age', uid };
    if (now.getTime() - instance.createdAt.getTime() < minAgeMs)
      return { instance, delete: false, keep: 'too_young', uid };
    if (liveUids.has(uid)) return { instance, delete: false, keep: 'live', uid };
    return { instance, delete: true, uid };
  });
}
