// PassiveFeedStore on Firestore: the cursor is `cursors/probe-passive` {through: Timestamp, tracked: [proxy]}; a commit is
// one batched write of the changed `health/{proxy}` documents plus the cursor, guarded by the cursor's
// updateTime (or create() for the first), so it fails whole when another tick moved the cursor
// (recipes §7: preconditions rather than contended transactions).
import { type Firestore, Timestamp } from '@google-cloud/firestore';
import type { ProxyHealthState } from '../../domain/health/proxy-health.js';
import { type PassiveCursor, PassiveFeedError, type PassiveFeedStore } from '../../ports/passive-feed.js';
import { Collections } from './collections.js';
import { healthToDoc } from './health-store.js';
import { timestampOfVersion, versionOf } from './proxy-converter.js';
import { ALREADY_EXISTS, codeOf, FAILED_PRECONDITION, NOT_FOUND } from './worker-errors.js';

export const PASSIVE_CURSOR_ID = 'probe-passive';

export class FirestorePassiveFeedStore implements PassiveFeedStore {
  constructor(private readonly db: Firestore) {}

  private ref() {
    return this.db.collection(Collections.cursors).doc(PASSIVE_CURSOR_ID);
  }

  async cursor(): Promise<PassiveCursor | null> {
    try {
      const snap = await this.ref().get();
      const through = snap.get('through');
      if (!snap.exists || !(through instanceof Timestamp)) return null;
      const tracked = snap.get('tracked');
      return {
        through: through.toDate(),
        token: versionOf(snap.updateTime!),
        tracked: Array.isArray(tracked) ? tracked.filter((t): t is string => typeof t === 'string') : [],
      };
    } catch (err) {
      throw failure(err, 'read the passive cursor');
    }
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

function failure(err: unknown, what: string): PassiveFeedError {
  if (err instanceof PassiveFeedError) return err;
  const code = codeOf(err);
  if (code === FAILED_PRECONDITION || code === ALREADY_EXISTS || code === NOT_FOUND)
    return new PassiveFeedError('conflict', `${what}: another tick moved the cursor`, { cause: err });
  return new PassiveFeedError('unavailable', `${what} failed`, { cause: err });
}
