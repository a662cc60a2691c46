// Capacity over a proxy's lease entries. Every function takes `now`: an entry whose expiresAt has passed
// stops counting at that instant, whether or not anything has pruned it yet. Only the entries of the proxy
// instance (metadata.uid) count against its capacity (instance.ts): a proxy created again under a deleted
// one's name does not inherit its leases.
import { ofInstance } from './instance.js';
import type { LeaseEntry } from './model.js';

export interface Usage {
  /** Leases counting against capacity at `now`. */
  active: number;
  /** An exclusive lease is among them: the proxy is full whatever its capacity. */
  exclusive: boolean;
  /**
   * The stored lease state could not be read (a hand-edited document): the proxy counts as full, fail
   * closed (`exclusive`), and `active` is no count of anything — what lists usage shows this flag instead.
   */
  unreadable?: true;
}

export function activeEntries(entries: readonly LeaseEntry[], now: Date): LeaseEntry[] {
  const t = now.getTime();
  return entries.filter((e) => e.expiresAt.getTime() > t);
}

/** What counts against the capacity of proxy instance `uid` at `now`. */
export function usageOf(entries: readonly LeaseEntry[], uid: string, now: Date): Usage {
  const active = activeEntries(ofInstance(entries, uid), now);
  return { active: active.length, exclusive: active.some((e) => e.exclusive) };
}

/**
 * Whether proxy instance `uid` has leases at `now`: the snapshot planner does not hand an unowned pool
 * proxy to a gateway worker until it has none. Leases of a deleted proxy of the same name are not its own.
 */
export function isLeased(entries: readonly LeaseEntry[], uid: string, now: Date): boolean {
  return usageOf(entries, uid, now).active > 0;
}

/** Whether one more lease fits: an exclusive lease needs the proxy empty, any lease needs no exclusive holder. */
export function hasRoom(usage: Usage, capacity: number, exclusive: boolean): boolean {
  if (usage.exclusive) return false;
  return exclusive ? usage.active === 0 : usage.active < capacity;
}

/**
 * The entries after granting `entry` on the proxy instance `uid`, or null when it does not fit there.
 * Expired entries are pruned on the way. Active entries of another instance (a deleted proxy of the same
 * name) do not count, but are kept until they expire: which instance is the current one is the catalog's
 * view, and a replica whose view is behind must not drop the leases of the proxy that replaced it.
 */
export function grantEntry(
  entries: readonly LeaseEntry[],
  entry: LeaseEntry & { proxyUid: string },
  capacity: number,
  now: Date,
): LeaseEntry[] | null {
  const active = activeEntries(entries, now);
  if (!hasRoom(usageOf(active, entry.proxyUid, now), capacity, entry.exclusive)) return null;
  return [...active, entry];
}

/** The entries without `leaseId` (pruned), or null when it is not among the active ones (nothing to do). */
export function removeEntry(entries: readonly LeaseEntry[], leaseId: string, now: Date): LeaseEntry[] | null {
  const active = activeEntries(entries, now);
  const kept = active.filter((e) => e.leaseId !== leaseId);
  return kept.length === active.length ? null : kept;
}

/** The entries with `leaseId` now expiring at `expiresAt`, or null when it is no longer active. */
export function extendEntry(
  entries: readonly LeaseEntry[],
  leaseId: string,
  expiresAt: Date,
  now: Date,
): LeaseEntry[] | null {
  const active = activeEntries(entries, now);
  if (!active.some((e) => e.leaseId === leaseId)) return null;
  return active.map((e) => (e.leaseId === leaseId ? { ...e, expiresAt } : e));
}
