// A lease belongs to the proxy instance it was granted on — the proxy's metadata.uid — not to its name: a
// proxy deleted and created again under the same name is another proxy (another VM or endpoint, another
// capacity). Leases and lease-state entries stored before uids were recorded carry none; they belong to
// whatever proxy has the name, as they always did.
import type { Lease, LeaseEntry } from './model.js';

/** The proxy as these rules need it: its name and the uid of this instance. */
export interface ProxyInstance {
  name: string;
  uid: string;
}

/** Whether something recorded on proxy instance `recorded` (undefined/null: before uids were kept) is `uid`'s. */
export function sameInstance(recorded: string | null | undefined, uid: string): boolean {
  return recorded === undefined || recorded === null || recorded === uid;
}

/** The entries that count against the capacity of proxy instance `uid` (expiry aside). */
export function entriesOf(entries: readonly LeaseEntry[], uid: string): LeaseEntry[] {
  return entries.filter((e) => sameInstance(e.proxyUid, uid));
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
 * Whether a report on the lease may start a cooldown under its proxy's name: not when the proxy it was
 * granted on is gone — no cooldown can matter to it, and one keyed by the name would keep a proxy created
 * again under that name out of selection. A lease without a uid reports as it always did.
 */
export function reportCoolsDown(lease: Pick<Lease, 'proxyUid'>, listed: ProxyInstance | undefined): boolean {
  return lease.proxyUid === null || listed?.uid === lease.proxyUid;
}
