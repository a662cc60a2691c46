// A cooldown report's write (FirestoreLeaseStore.startCooldown, which runs one lease's at a time): the
// (proxy, target) cooldown document, with the site's addition to its lease's list when it is new to it.
import { FieldValue, type Firestore, type Timestamp } from '@google-cloud/firestore';
import { siteListing } from '../../domain/leases/cooldown-sites.js';
import type { Cooldown } from '../../domain/leases/model.js';
import {
  COOLDOWN_SITES_PER_LEASE,
  type CooldownStart,
  LeaseStoreError,
  type ReportedLease,
} from '../../ports/lease-store.js';
import { cooldownDocId, LEASE_COLLECTIONS } from './lease-collections.js';
import { encodeCooldown } from './lease-converter.js';
import type { LeaseCooldownCache } from './lease-cooldown-cache.js';
import { COOLDOWN_SITES_FIELD, type LocatedLease, leaseRef } from './lease-document.js';
import { isConflict, jitteredBackoff } from './lease-errors.js';
import { bounded } from './lease-state-access.js';

/** What writeCooldown uses of the store. */
export interface CooldownWriteDeps {
  db: Firestore;
  /** This replica's view of the cooldowns, told of the one written. */
  cooldowns: Pick<LeaseCooldownCache, 'put'>;
  /** Commits one report may attempt before answering "contended". */
  maxCommits: number;
  locate: (leaseId: string) => Promise<LocatedLease | null>;
}

/**
 * The sites a lease has started cooldowns for are listed on it (`cooldownSites`): a cooldown for a site
 * not listed yet is written together with the site's addition, preconditioned on the lease document as
 * read, so that reports at once on any replicas never list more than COOLDOWN_SITES_PER_LEASE. Without
 * it one lease reporting ever new targets wrote a cooldown document for each. The proxy-wide cooldown and
 * the lease's own site are never capped nor listed (cooldown-sites.ts): capped, a `banned` report
 * without a target past the cap left a banned proxy to be handed out. The lease is the report's own read
 * of it (findForReport): read here again, a report paid two reads of it — and only when another write
 * to it landed since is it read again.
 */
export async function writeCooldown(
  deps: CooldownWriteDeps,
  cooldown: Cooldown,
  read: ReportedLease,
): Promise<CooldownStart> {
  const id = cooldownDocId(cooldown.proxy, cooldown.target);
  const ref = deps.db.collection(LEASE_COLLECTIONS.cooldowns).doc(id);
  const lease = leaseRef(deps.db, cooldown.leaseId);
  let sites = read.cooldownSites;
  let version = read.version as unknown as Timestamp;
  for (let attempt = 1; ; attempt++) {
    const listing = siteListing(cooldown.target, read.lease.target, sites, COOLDOWN_SITES_PER_LEASE);
    if (listing === 'capped') return 'capped';
    const batch = deps.db.batch().set(ref, encodeCooldown(cooldown));
    if (listing === 'add') {
      const add = { [COOLDOWN_SITES_FIELD]: FieldValue.arrayUnion(cooldown.target) };
      batch.update(lease, add, { lastUpdateTime: version });
    }
    try {
      await bounded(() => batch.commit(), 'write cooldown');
      deps.cooldowns.put(id, cooldown);
      return 'started';
    } catch (err) {
      // The lease written since it was read (a renewal, another report), or deleted: read it again.
      if (!isConflict(err)) throw new LeaseStoreError('unavailable', 'write cooldown', { cause: err });
      if (attempt >= deps.maxCommits)
        throw new LeaseStoreError('contended', `no cooldown written after ${attempt} attempts`, {
          cause: err,
        });
      // The first loss is to the version the report read before its turn: no contention yet.
      if (attempt > 1) await jitteredBackoff(attempt - 1);
      const again = await deps.locate(cooldown.leaseId);
      if (!again?.lease) return 'unknown_lease';
      ({ cooldownSites: sites, version } = again);
    }
  }
}
