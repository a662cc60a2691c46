// PassiveFeedStore on Firestore: the cursor is `cursors/probe-passive` {through: Timestamp, tracked: [proxy]}; a commit is
// one batched write of the changed `health/{proxy}` documents plus the cursor, guarded by the cursor's
// updateTime (or create() for the first) and by each health document's own (health-store.ts
// stageHealthWrite), so it fails whole when another tick moved the cursor or another pass wrote one of the
// proxies (recipes §7: preconditions rather than contended transactions). The cursor carries the ids of
// its last few commits (`recentWriteIds`), so a commit the client sent again after its first attempt
// landed — failing on its own write, or with another error — is known for committed, not taken for another
// tick's (health-store.ts), also when another tick has committed on top of it meanwhile.
import { type DocumentSnapshot, FieldValue, type Firestore, Timestamp } from '@google-cloud/firestore';
import type { HealthWrite } from '../../ports/health-store.js';
import {
  type PassiveCommitResult,
  type PassiveCursor,
  PassiveFeedError,
  type PassiveFeedStore,
} from '../../ports/passive-feed.js';
import { Collections } from './collections.js';
import { isHealthConflict, stageHealthWrite } from './health-store.js';
import { timestampOfVersion, versionOf } from './proxy-converter.js';
import { newWriteId, WRITE_ID } from './write-mark.js';

export const PASSIVE_CURSOR_ID = 'probe-passive';

/** Where nothing is known to be counted: the pass clamps its window to the expiry floor anyway. */
const NOTHING_COUNTED = new Date(0);

// The last commit's id alone was erased by a tick that read the moved cursor and committed the next window
// before the resend (the client waits its backoff first): the pass took its own commit for that tick's and
// published none of its window's transitions. A few ids cover ticks that overlap, never many.
const RECENT_WRITE_IDS = 'recentWriteIds';
const RECENT_WRITES = 4;

export class FirestorePassiveFeedStore implements PassiveFeedStore {
  private warnedMalformed = false;
  /** The commit ids of the cursor as cursor() last read it, at that version: what the next commit keeps. */
  private lastRead: { token: string; ids: string[] } | null = null;

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
    this.lastRead = read && { token: read.cursor.token, ids: recentWriteIds(snap) };
    if (read?.malformed && !this.warnedMalformed) {
      this.warnedMalformed = true;
      this.warn('passive cursor unreadable; counting from the expiry window and rewriting it', {
        cursor: snap.ref.path,
      });
    }
    return read?.cursor ?? null;
  }

  async commit(
    writes: HealthWrite[],
    next: Omit<PassiveCursor, 'token'>,
    expected: string | null,
  ): Promise<PassiveCommitResult> {
    const batch = this.db.batch();
    const writeId = newWriteId();
    const data = { through: Timestamp.fromDate(next.through), tracked: next.tracked };
    if (expected === null) batch.create(this.ref(), { ...data, [RECENT_WRITE_IDS]: [writeId] });
    else {
      const at = timestampOfVersion(expected);
      if (!at) return 'conflict';
      const recent = [writeId, ...(await this.recentAt(expected))].slice(0, RECENT_WRITES);
      // The one id it carried before goes: left, it would name a commit that is not the last.
      const update = { ...data, [RECENT_WRITE_IDS]: recent, [WRITE_ID]: FieldValue.delete() };
      batch.update(this.ref(), update, { lastUpdateTime: at });
    }
    const health = this.db.collection(Collections.health);
    for (const w of writes)
      if (!stageHealthWrite(batch, health.doc(w.state.proxy), w, writeId)) return 'conflict';
    try {
      await batch.commit();
      return 'committed';
    } catch (err) {
      // Atomic: the cursor carrying this commit's id says all of it landed, on an attempt whose answer was
      // lost — also when the call then failed otherwise (DEADLINE_EXCEEDED, a last UNAVAILABLE). Thrown,
      // the pass would publish none of the window's transitions and log the window as to be read again,
      // while the moved cursor has counted it.
      if (await this.carries(writeId)) return 'committed';
      if (!isHealthConflict(err)) throw failure(err, 'commit passive health states');
      return 'conflict';
    }
  }

  /** The commit ids the cursor holds at version `expected`: as cursor() read them, or read again (at
   *  another version the commit fails its precondition, whatever it keeps). */
  private async recentAt(expected: string): Promise<string[]> {
    if (this.lastRead?.token === expected) return this.lastRead.ids;
    try {
      return recentWriteIds(await this.ref().get());
    } catch (err) {
      throw failure(err, 'read the passive cursor');
    }
  }

  /** Whether the commit `writeId` is among the cursor's last few (false when the read fails: the commit's
   *  own answer stands, as before the check). */
  private async carries(writeId: string): Promise<boolean> {
    try {
      return recentWriteIds(await this.ref().get()).includes(writeId);
    } catch {
      return false;
    }
  }
}

/** The ids of the cursor's last few commits, newest first; none where a console edit left something else. */
function recentWriteIds(snap: Pick<DocumentSnapshot, 'exists' | 'get'>): string[] {
  const ids: unknown = snap.exists ? snap.get(RECENT_WRITE_IDS) : undefined;
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
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
  return new PassiveFeedError('unavailable', `${what} failed`, { cause: err });
}
