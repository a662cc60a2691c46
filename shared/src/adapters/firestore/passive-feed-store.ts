// PassiveFeedStore on Firestore: the cursor is `cursors/probe-passive` {through: Timestamp, tracked: [proxy]}; a commit is
// one batched write of the changed `health/{proxy}` documents plus the cursor, guarded by the cursor's
// updateTime (or create() for the first), so it fails whole when another tick moved the cursor
// (recipes §7: preconditions rather than contended transactions).
import { type DocumentSnapshot, type Firestore, Timestamp } from '@google-cloud/firestore';
import type { ProxyHealthState } from '../../domain/health/proxy-health.js';
import { type PassiveCursor, PassiveFeedError, type PassiveFeedStore } from '../../ports/passive-feed.js';
import { Collections } from './collections.js';
import { healthToDoc } from './health-store.js';
import { timestampOfVersion, versionOf } from './proxy-converter.js';
import { ALREADY_EXISTS, codeOf, FAILED_PRECONDITION, NOT_FOUND } from './worker-errors.js';

export const PASSIVE_CURSOR_ID = 'probe-passive';

/** Where nothing is known to be counted: the pass clamps its window to the expiry floor anyway. */
const NOTHING_COUNTED = new Date(0);

export class FirestorePassiveFeedStore implements PassiveFeedStore {
  private warnedMalformed = false;

  constructor(
    private readonly db: Firestore,
    private readonly warn: (message: string, fields: Record<string, unknown>) => void = () => {},
  ) {}

  private ref() {
    return this.db.collection(Collections.cursors).doc(PASSIVE_CURSOR_ID);
  }

  async cursor(): Promise<PassiveCursor | null> {
    let snap: DocumentSnapshot;
    try {
      snap = await this.ref().get();
    } catch (err) {
      throw failure(err, 'read the passive cursor');
    }
    const read = cursorFromSnapshot(snap);
    if (read?.malformed && !this.warnedMalformed) {
      this.warnedMalformed = true;
      this.warn('passive cursor unreadable; counting from the expiry window and rewriting it', {
        cursor: snap.ref.path,
      });
    }
    return read?.cursor ?? null;
  }

  async commit(
    states: ProxyHealthState[],
    next: Omit<PassiveCursor, 'token'>,
    expected: string | null,
  ): Promise<void> {
    const batch = this.db.batch();
    const data = { through: Timestamp.fromDate(next.through), tracked: next.tracked };
    if (expected === null) batch.create(this.ref(), data);
    else {
      const at = timestampOfVersion(expected);
      if (!at) throw new PassiveFeedError('conflict', `not a version token: ${expected}`);
      batch.update(this.ref(), data, { lastUpdateTime: at });
    }
    const health = this.db.collection(Collections.health);
    for (const s of states) batch.set(health.doc(s.proxy), healthToDoc(s));
    try {
      await batch.commit();
    } catch (err) {
      throw failure(err, 'commit passive health states');
    }
  }
}

/**
 * The cursor a snapshot holds, or null when there is no document. A document that exists but no longer
 * fits (edited by hand) is still the version to commit on: read as "no cursor", the commit would create()
 * it, fail ALREADY_EXISTS and be taken for another tick's conflict on every tick forever. So it reads as
 * "nothing counted" at its version, and the next commit rewrites `through` and `tracked`.
 */
export function cursorFromSnapshot(
  snap: Pick<DocumentSnapshot, 'exists' | 'updateTime' | 'get'>,
): { cursor: PassiveCursor; malformed: boolean } | null {
  if (!snap.exists || !snap.updateTime) return null;
  const through = snap.get('through');
  const tracked = snap.get('tracked');
  const malformed = !(through instanceof Timestamp) || !Array.isArray(tracked);
  return {
    cursor: {
      through: through instanceof Timestamp ? through.toDate() : NOTHING_COUNTED,
      token: versionOf(snap.updateTime),
      tracked: Array.isArray(tracked) ? tracked.filter((t): t is string => typeof t === 'string') : [],
    },
    malformed,
  };
}

function failure(err: unknown, what: string): PassiveFeedError {
  if (err instanceof PassiveFeedError) return err;
  const code = codeOf(err);
  if (code === FAILED_PRECONDITION || code === ALREADY_EXISTS || code === NOT_FOUND)
    return new PassiveFeedError('conflict', `${what}: another tick moved the cursor`, { cause: err });
  return new PassiveFeedError('unavailable', `${what} failed`, { cause: err });
}
