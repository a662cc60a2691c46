// A lease belongs to the proxy instance it was granted on — the proxy's metadata.uid — not to its name: a
// proxy deleted and created again under the same name is another proxy (another VM or endpoint, another
// capacity, another standing with the sites it fetches). The same holds of everything recorded against a
// proxy: leases, lease-state entries and cooldowns carry the uid they were recorded on, and count only for
// that instance — in the lease API, discovery, the fleet page and the snapshot planner alike, all through
// sameInstance below. Records stored before uids were kept carry none; they belong to whatever proxy has
// the name, as they always did.
import type { Lease } from './model.js';

/** The proxy as these rules need it: its name and the uid of this instance. */
export interface ProxyInstance {
  name: string;
  uid: string;
}

/** Whether something recorded on proxy instance `recorded` (undefined/null: before uids were kept) is `uid`'s. */
export function sameInstance(recorded: string | null | undefined, uid: string): boolean {
  return recorded === undefined || recorded === null || recorded === uid;
}

/** Something recorded against a proxy: a lease-state entry, a cooldown. */
export interface RecordedOn {
  /** The uid of the proxy instance it was recorded on; undefined/null when stored before uids were kept. */
  proxyUid?: string | null | undefined;
}

/**
 * The records of a proxy's name that are proxy instance `uid`'s (expiry aside): the entries that count
 * against its capacity, the cooldowns that keep it out of selection.
 */
export function ofInstance<T extends RecordedOn>(records: readonly T[], uid: string): T[] {
  return records.filter((r) => sameInstance(r.proxyUid, uid));
}

/**
 * Whether a lease may still be renewed on the proxy now listed under its name (`listed`; undefined: none):
 * only on the instance it was granted on. Whether that proxy is being deleted or held by the gateway is
 * asked apart (the lease service's renewable()).
 */
export function renewsOn(lease: Pick<Lease, 'proxyUid'>, listed: ProxyInstance | undefined): boolean {
  return listed !== undefined && sameInstance(lease.proxyUid, listed.uid);
}

/**
 * Whether a report on the lease may start a cooldown: not when the proxy it was granted on is gone — no
 * cooldown can matter to it. The cooldown would carry the old uid and so not cool down a proxy created
 * again under the name, but it is stored under (name, target) and would replace that proxy's own cooldown
 * for the target. A lease without a uid reports as it always did.
 */
export function reportCoolsDown(lease: Pick<Lease, 'proxyUid'>, listed: ProxyInstance | undefined): boolean {
  return lease.proxyUid === null || listed?.uid === lease.proxyUid;
}
