// Idempotency-Key records (leaseKeys/{recordId}) of the lease store: read, marked replayed, written in a
// grant's commit, and dropped with (or after) the lease they answered with.
import { FieldValue, type Firestore, Timestamp } from '@google-cloud/firestore';
import type { Clock } from '../../ports/clock.js';
import {
  type KeyDrop,
  type KeyIntent,
  type KeyVersion,
  LeaseStoreError,
  type StoredKey,
} from '../../ports/lease-store.js';
import type { Logger } from '../log/json-logger.js';
import { LEASE_COLLECTIONS } from './lease-collections.js';
import { decodeKey, encodeKey, REPLAYED_FIELD } from './lease-converter.js';
import { isConflict, isTransient, jitteredBackoff } from './lease-errors.js';
import { bounded, type DocumentWrite, guard } from './lease-state-access.js';

/** Deletes of an ended lease's key record tried before a failure in passing is answered 503. */
const KEY_DROP_ATTEMPTS = 3;

export class LeaseKeys {
  constructor(
    private readonly db: Firestore,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** The key record's write in a grant's commit: created, or written over the expired one that was read. */
  keyWrite(leaseId: string, key: KeyIntent, now: Date): DocumentWrite {
    const data = encodeKey({ leaseId, requestHash: key.requestHash, expiresAt: key.expiresAt }, now);
    const replaces = key.replaces as Timestamp | null;
    return {
      ref: this.keyRef(key.recordId),
      write: (b, ref) => {
        // An update keeps the fields it does not name: the old lease's replay mark goes.
        if (replaces)
          b.update(ref, { ...data, [REPLAYED_FIELD]: FieldValue.delete() }, { lastUpdateTime: replaces });
        else b.create(ref, data);
      },
    };
  }

  async findKey(recordId: string): Promise<StoredKey | null> {
    const snap = await guard('read idempotency key', () => this.keyRef(recordId).get());
    if (!snap.exists || !snap.updateTime) return null;
    const version = snap.updateTime as unknown as KeyVersion;
    const key = decodeKey(snap.data());
    if (key) return { ...key, version };
    // Edited by hand: not a record any request can replay; the next grant with that key writes over it.
    this.log.error('malformed idempotency key record', { recordId });
    return {
      leaseId: '',
      requestHash: '',
      expiresAt: new Date(0),
      version,
      grantedAt: new Date(0),
      replayed: false,
    };
  }

  async markReplayed(recordId: string, version: KeyVersion): Promise<boolean> {
    const at = Timestamp.fromDate(this.clock.now());
    const precondition = { lastUpdateTime: version as unknown as Timestamp };
    try {
      await bounded(
        () => this.keyRef(recordId).update({ [REPLAYED_FIELD]: at }, precondition),
        'mark idempotency key replayed',
      );
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw new LeaseStoreError('unavailable', 'mark idempotency key replayed', { cause: err });
    }
  }

  /**
   * The key record `drop` names deleted while it is still that version: true once it is gone (by this
   * write, or already), false when another delivery has written it since. A delete that failed in
   * passing is tried again while the record is still that version.
   */
  async dropKeyAlone(drop: KeyDrop): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        const at = { lastUpdateTime: drop.version as unknown as Timestamp };
        await bounded(() => this.keyRef(drop.recordId).delete(at), 'drop idempotency key');
        return true;
      } catch (err) {
        const transient = isTransient(err);
        if ((!isConflict(err) && !transient) || (transient && attempt >= KEY_DROP_ATTEMPTS))
          throw new LeaseStoreError('unavailable', 'drop idempotency key', { cause: err });
        const stored = await this.findKey(drop.recordId);
        if (stored === null) return true; // gone: by a delete that landed, or its TTL
        if (!sameVersion(stored.version, drop.version)) return false;
        if (!transient) return false; // a conflict, yet the same version: cannot be, never loop on it
        await jitteredBackoff(attempt);
      }
    }
  }

  /** Whether the key record is still the version `drop` names. */
  async keyStill(drop: KeyDrop): Promise<boolean> {
    const stored = await this.findKey(drop.recordId);
    return stored !== null && sameVersion(stored.version, drop.version);
  }

  keyRef(recordId: string) {
    return this.db.collection(LEASE_COLLECTIONS.keys).doc(recordId);
  }
}

export function sameVersion(a: KeyVersion, b: KeyVersion | null): boolean {
  return b !== null && (a as unknown as Timestamp).isEqual(b as unknown as Timestamp);
}
