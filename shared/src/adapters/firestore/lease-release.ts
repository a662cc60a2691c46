// A lease's release (LeaseStore.release): its entry removed from its proxy's state, committed with the
// lease document's end and, when asked, the deletion of the Idempotency-Key record that answered with it.
import { type Firestore, Timestamp } from '@google-cloud/firestore';
import { removeEntry } from '../../domain/leases/capacity.js';
import { type LeaseSettings, resolvableUntil } from '../../domain/leases/model.js';
import type { Clock } from '../../ports/clock.js';
import { type KeyDrop, LeaseStoreError } from '../../ports/lease-store.js';
import type { Logger } from '../log/json-logger.js';
import { loggedLeaseId } from '../log/logged-lease-id.js';
import { TTL_FIELD } from './lease-collections.js';
import { type LocatedLease, leaseRef } from './lease-document.js';
import type { LeaseKeys } from './lease-keys.js';
import { type Budget, bounded, type DocumentWrite, type LeaseStateAccess } from './lease-state-access.js';
import type { LeaseStateCache, StateBase } from './lease-state-cache.js';
import type { WriteTurn } from './lease-write-turn.js';

/** What releaseLease uses of the store. */
export interface ReleaseDeps {
  db: Firestore;
  clock: Clock;
  settings: LeaseSettings;
  log: Logger;
  state: Pick<LeaseStateCache, 'get' | 'proxyOf'>;
  access: Pick<LeaseStateAccess, 'read' | 'commit'>;
  keys: Pick<LeaseKeys, 'keyRef' | 'dropKeyAlone' | 'keyStill'>;
  locate: (leaseId: string) => Promise<LocatedLease | null>;
  writing: WriteTurn;
}

export async function releaseLease(
  deps: ReleaseDeps,
  leaseId: string,
  opts: { dropKey?: KeyDrop } = {},
): Promise<boolean> {
  const drop = opts.dropKey;
  const dropKey: DocumentWrite[] = drop
    ? [
        {
          ref: deps.keys.keyRef(drop.recordId),
          write: (b, ref) => b.delete(ref, { lastUpdateTime: drop.version as unknown as Timestamp }),
        },
      ]
    : [];
  // Nothing to release: an ended lease's record goes alone.
  const over = () => (drop ? deps.keys.dropKeyAlone(drop) : Promise.resolve(true));
  let proxy = deps.state.proxyOf(leaseId);
  /** Whether leases/{leaseId} is there to be updated (undefined: not looked at). */
  let stored: boolean | undefined;
  if (!proxy) {
    // A document edited into one that does not decode still names its proxy, whose entry is ended below.
    // Without a document (deleted by hand) there is nothing left to find the entry by: it holds its slot
    // until it expires (docs/leases.md, "Ending a lease by hand").
    const found = await deps.locate(leaseId);
    if (!found?.proxy || found.lease?.releasedAt) return over();
    proxy = found.proxy;
    stored = true;
  }
  const name = proxy;
  const budget: Budget = { commits: 0 };
  return deps.writing(name, async () => {
    let base: StateBase | undefined = deps.state.get(name);
    let fresh = !base;
    for (;;) {
      if (!base || fresh) base = await deps.access.read(name);
      const now = deps.clock.now();
      if (base.entries === null && fresh) {
        // The proxy's state does not decode (edited by hand; logged): its entries cannot be rewritten,
        // and the proxy counts as full until it is repaired. The lease itself still ends now, so it is
        // neither counted active nor handed out again by a replay of its key — unless a replay has
        // already answered with it (the key record moved): the crawler may hold it, it is not given back.
        if (drop && !(await deps.keys.keyStill(drop))) return false;
        await endAlone(deps, leaseId, now);
        return over();
      }
      const entries = base.entries && removeEntry(base.entries, leaseId, now);
      if (!entries) {
        // Not among the active entries: released or expired already (or by a commit that failed
        // transiently yet landed) — unless this view is behind.
        if (fresh) return over();
        fresh = true;
        continue;
      }
      // A commit failed: on the state's precondition, or on the key record's — written by a replay
      // that answered with this lease, which the crawler may now hold: it is not given back.
      if (drop && budget.commits > 0 && !(await deps.keys.keyStill(drop))) return false;
      // The update of a lease document deleted by hand fails as NOT_FOUND, which reads as a lost race:
      // the release was committed again until its budget ran out (503, at every retry), and the entry
      // held its slot until it expired. After a lost commit the document is looked for, once; gone, the
      // entry is ended alone.
      if (budget.commits > 0 && stored === undefined) {
        stored = (await deps.locate(leaseId)) !== null;
        if (!stored)
          deps.log.warn('lease document missing: its entry is ended alone', {
            lease: loggedLeaseId(leaseId),
            proxy: name,
          });
      }
      const ended = endedAt(deps.settings, now);
      const update: DocumentWrite = {
        ref: leaseRef(deps.db, leaseId),
        write: (b, ref) => b.update(ref, ended),
      };
      const writes = stored === false ? dropKey : [update, ...dropKey];
      if (await deps.access.commit(name, base, entries, now, budget, writes)) return true;
      fresh = true;
    }
  });
}

/** A lease document's fields once it is released at `now`. */
function endedAt(settings: LeaseSettings, now: Date) {
  const at = Timestamp.fromDate(now);
  const ttl = Timestamp.fromDate(resolvableUntil({ expiresAt: now, releasedAt: now }, settings));
  return { releasedAt: at, endsAt: at, [TTL_FIELD]: ttl };
}

/** Records a lease released at `now` on its document alone (its proxy's state cannot be rewritten). */
async function endAlone(deps: ReleaseDeps, leaseId: string, now: Date): Promise<void> {
  try {
    await bounded(() => leaseRef(deps.db, leaseId).update(endedAt(deps.settings, now)), 'end lease');
  } catch (err) {
    if ((err as { code?: unknown }).code === 5) return; // NOT_FOUND: no lease document to end
    throw new LeaseStoreError('unavailable', 'end lease', { cause: err });
  }
}
