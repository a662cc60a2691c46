// Reads of a lease document (leases/{id}) as the lease store's parts need it: decoded, with its version
// and the bookkeeping fields renewals and cooldown reports keep on it.
import type { Firestore, Timestamp } from '@google-cloud/firestore';
import type { Lease } from '../../domain/leases/model.js';
import type { Logger } from '../log/json-logger.js';
import { loggedLeaseId } from '../log/logged-lease-id.js';
import { LEASE_COLLECTIONS } from './lease-collections.js';
import { decodeLease, leaseProxyOf } from './lease-converter.js';
import { guard } from './lease-state-access.js';

/** The lease document's list of the ids of its last renewals, oldest first (renew). */
export const RENEWAL_IDS_FIELD = 'renewalIds';

/** The lease document's list of the sites it started cooldowns for (startCooldown). */
export const COOLDOWN_SITES_FIELD = 'cooldownSites';

/**
 * A lease document as read: decoded, or — edited by hand into one that does not decode — null beside the
 * proxy it still names; its version, and the ids of the last renewals that wrote it, oldest first.
 */
export interface LocatedLease {
  lease: Lease | null;
  proxy: string | null;
  version: Timestamp;
  renewalIds: string[];
  /** The sites it has started cooldowns for (startCooldown). */
  cooldownSites: string[];
}

export function leaseRef(db: Firestore, id: string) {
  return db.collection(LEASE_COLLECTIONS.leases).doc(id);
}

/**
 * The lease document: decoded, or — edited by hand into one that does not decode — null beside the
 * proxy it still names (null too when it names none); null when there is no document.
 */
export async function locateLease(db: Firestore, log: Logger, leaseId: string): Promise<LocatedLease | null> {
  const snap = await guard('read lease', () => leaseRef(db, leaseId).get());
  if (!snap.exists || !snap.updateTime) return null;
  const data = snap.data();
  const version = snap.updateTime;
  const renewalIds = stringsOf(data?.[RENEWAL_IDS_FIELD]);
  const cooldownSites = stringsOf(data?.[COOLDOWN_SITES_FIELD]);
  const lease = decodeLease(data);
  if (lease) return { lease, proxy: lease.proxy, version, renewalIds, cooldownSites };
  log.error('malformed lease document', { lease: loggedLeaseId(leaseId) });
  return { lease: null, proxy: leaseProxyOf(data), version, renewalIds, cooldownSites };
}

/** The strings a list field holds (none when the field is absent, or edited into something else). */
function stringsOf(field: unknown): string[] {
  return Array.isArray(field) ? field.filter((s): s is string => typeof s === 'string') : [];
}
