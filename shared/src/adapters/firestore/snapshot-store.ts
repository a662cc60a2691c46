// SnapshotStore on Firestore: snapshots/{workerId} is the header of the latest full snapshot (version,
// epoch, checksum, grant, drains, the versions recently built — what ACKs are checked against), and
// snapshots/{workerId}/parts/{n} hold its proxies, at most PART_SIZE and PART_BYTES per document, because a
// 10,000-proxy snapshot (~2.6 MB) does not fit Firestore's 1 MiB document limit. Parts and header are written in one transaction,
// so a reader never sees a header pointing at parts of another version, and a version is saved once.
import {
  type DocumentData,
  type DocumentSnapshot,
  type Firestore,
  type QuerySnapshot,
  Timestamp,
} from '@google-cloud/firestore';
import { z } from 'zod';
import {
  GATEWAY_SNAPSHOT_SCHEMA_VERSION,
  GatewayProxy,
  GatewayRoute,
  type GatewaySnapshot,
} from '../../messages/gateway-snapshot.js';
import { WorkerStoreError } from '../../ports/workers.js';
import type { SnapshotHeader, SnapshotStore, SweepResult } from '../../ports/workers-snapshots.js';
import { throwIfGivenUp } from '../deadline.js';
import { Collections } from './collections.js';
import { STATE_DOC } from './ownership-store.js';
import { storedEntry, wireEntry } from './snapshot-part-times.js';
import { boundedCall, deadlinesOf, type WorkerStoreDeadlines } from './worker-deadline.js';
import { workerStoreFailure } from './worker-errors.js';

export const PART_SIZE = 2000;
/**
 * A part also ends before its proxies' JSON passes this many bytes: Firestore refuses a document over
 * 1 MiB, and an entry may weigh up to ~10 KB (32 attributes of 256 characters), not the ~280 bytes of a
 * bare one. JSON is close to Firestore's own count (a number is 8 bytes there): the margin covers it.
 */
export const PART_BYTES = 768 * 1024;
const PARTS = 'parts';
const GET_BATCH = 300;
/** Reads of a snapshot whose parts belong to another version before loadFull gives up (a race with a save). */
const TORN_READ_ATTEMPTS = 3;

const ts = z.instanceof(Timestamp).transform((t) => t.toDate());
const int = z.number().int();
const HeaderDoc = z.object({
  workerId: z.string(),
  version: int,
  ownershipEpoch: int,
  checksum: z.string(),
  contentDigest: z.string(),
  sessionId: z.string().nullable(),
  generatedAt: ts,
  validUntil: ts,
  grantedUntil: ts.nullable(),
  draining: z.record(z.string(), int).default({}),
  recent: z.array(z.object({ version: int, epoch: int, checksum: z.string() })).default([]),
  sentAt: ts.nullable().default(null),
  ackOwed: z.object({ version: int, since: ts }).nullable().default(null),
  /** Set when sweepParts() deleted the parts: the header stays for its version, the snapshot is gone. */
  partsSweptAt: ts.nullable().default(null),
  proxies: int,
  parts: int,
  routing: z.array(GatewayRoute),
});
const PartDoc = z.object({
  index: int,
  version: int,
  proxies: z.array(z.preprocess(wireEntry, GatewayProxy)),
});
/**
 * What a header that no longer fits HeaderDoc (edited by hand, or written by a newer release that this one
 * cannot read whole — a route field it does not know) still tells for certain: its version and its grant.
 */
const HeaderCore = z.object({
  version: int,
  checksum: z.string().catch(''),
  grantedUntil: ts.nullable().catch(null),
  parts: int.catch(0),
});

const tsOrNull = (d: Date | null) => (d ? Timestamp.fromDate(d) : null);
const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

export class FirestoreSnapshotStore implements SnapshotStore {
  private readonly deadlines: { call?: number; list?: number };

  /**
   * `opts` (worker-deadline.ts): the bound of each call — a read, a batch of parts, a transaction whole —
   * and of the header listings (headersOf, headersInView: many batched reads, bounded together). A save or
   * patch given up is unavailable, an unknown outcome: its transaction may still commit (a commit already
   * sent: a body given up throws before it stages a write, throwIfGivenUp); a save tried again
   * then finds its own version and checksum stored (saved), a patch sets the same fields again.
   */
  constructor(
    private readonly db: Firestore,
    opts: WorkerStoreDeadlines = {},
  ) {
    this.deadlines = deadlinesOf(opts);
  }

  private ref(workerId: string) {
    return this.db.collection(Collections.snapshots).doc(workerId);
  }

  async header(workerId: string): Promise<SnapshotHeader | null> {
    const doc = await this.readHeader(workerId);
    return doc ? toHeader(doc) : null;
  }

  async headersOf(workerIds: readonly string[]): Promise<Map<string, SnapshotHeader>> {
    try {
      return await boundedCall(this.deadlines.list, 'read snapshot headers', async () => {
        const out = new Map<string, SnapshotHeader>();
        const refs = [...new Set(workerIds)].map((id) => this.ref(id));
        for (let i = 0; i < refs.length; i += GET_BATCH)
          addHeaders(out, await this.db.getAll(...refs.slice(i, i + GET_BATCH)), false);
        return out;
      });
    } catch (err) {
      throw workerStoreFailure(err, 'read snapshot headers');
    }
  }

  /**
   * One range query on grantedUntil (single-field index, automatic) and a batched get of the named
   * workers it did not return: a live worker's grant is renewed every pass, so that get is usually empty
   * and a pass reads about one header per worker in view, not one per worker ever started.
   */
  async headersInView(workerIds: readonly string[], cutoff: Date): Promise<Map<string, SnapshotHeader>> {
    try {
      return await boundedCall(this.deadlines.list, 'read the snapshot headers in view', async () => {
        const out = new Map<string, SnapshotHeader>();
        const granted = await this.db
          .collection(Collections.snapshots)
          .where('grantedUntil', '>', Timestamp.fromDate(cutoff))
          .get();
        addHeaders(out, granted.docs, true);
        const seen = new Set(granted.docs.map((d) => d.id));
        const rest = [...new Set(workerIds)].filter((id) => !seen.has(id)).map((id) => this.ref(id));
        for (let i = 0; i < rest.length; i += GET_BATCH)
          addHeaders(out, await this.db.getAll(...rest.slice(i, i + GET_BATCH)), true);
        return out;
      });
    } catch (err) {
      throw workerStoreFailure(err, 'read the snapshot headers in view');
    }
  }

  async loadFull(workerId: string): Promise<GatewaySnapshot | null> {
    // The header and its parts are read apart: a pass saving the next version in between leaves parts of
    // another version. That is a race, not damage — read again (a pass saves a version once a minute or
    // on demand, so a second read almost always sees one version); only a lasting mismatch fails.
    for (let attempt = 1; ; attempt++) {
      const read = await this.readFullOnce(workerId);
      if (read !== 'torn') return read;
      if (attempt >= TORN_READ_ATTEMPTS) {
        throw new WorkerStoreError(
          'unavailable',
          `read the snapshot of ${workerId}: its parts kept changing under ${TORN_READ_ATTEMPTS} reads`,
        );
      }
    }
  }

  private async readFullOnce(workerId: string): Promise<GatewaySnapshot | null | 'torn'> {
    const h = await this.readHeader(workerId);
    if (!h || h.partsSweptAt) return null;
    const refs = Array.from({ length: h.parts }, (_, i) =>
      this.ref(workerId).collection(PARTS).doc(String(i)),
    );
    try {
      const parts = refs.length
        ? await boundedCall(this.deadlines.call, `read the snapshot parts of ${workerId}`, () =>
            this.db.getAll(...refs),
          )
        : [];
      // A part gone (a save of a smaller next version, or the sweep) is the same race as one of another
      // version.
      if (parts.some((p) => !p.exists)) return 'torn';
      const decoded = parts.map((p) => PartDoc.parse(p.data()));
      if (decoded.some((part) => part.version !== h.version)) return 'torn';
      const proxies = decoded.flatMap((part) => part.proxies);
      return {
        kind: 'full',
        schemaVersion: GATEWAY_SNAPSHOT_SCHEMA_VERSION,
        version: h.version,
        ownershipEpoch: h.ownershipEpoch,
        workerId,
        generatedAt: h.generatedAt.toISOString(),
        validUntil: h.validUntil.toISOString(),
        routing: h.routing,
        proxies,
        checksum: h.checksum,
      };
    } catch (err) {
      throw workerStoreFailure(err, `read the snapshot of ${workerId}`);
    }
  }

  /**
   * In one transaction: refuses (WorkerStoreError `conflict`) when the stored header is already at or past
   * this version — unless it is this snapshot (same version and checksum), which is saved already. A pass that outlived its planner lock would otherwise overwrite the next pass's snapshot
   * with a different one of the same version, and a worker holding the other could never tell them apart
   * by version (its ACK would name a checksum the header no longer has).
   */
  async save(header: SnapshotHeader, full: GatewaySnapshot, guard?: { lockHolder: string }): Promise<void> {
    const ref = this.ref(header.workerId);
    const state = this.db.collection(Collections.ownership).doc(STATE_DOC);
    try {
      await boundedCall(this.deadlines.call, `store the snapshot of ${header.workerId}`, (signal) =>
        this.db.runTransaction(async (tx) => {
          throwIfGivenUp(signal);
          const [snap, planner] = await Promise.all([tx.get(ref), guard ? tx.get(state) : null]);
          // Read in the transaction, so a pass taking the lock is ordered before or after this save: before,
          // this save is refused; after, that pass reads the grant this save records.
          if (guard && lockHolderOf(planner) !== guard.lockHolder) {
            throw new WorkerStoreError(
              'conflict',
              `the planner lock is no longer held by ${guard.lockHolder}: not saving the snapshot of ${header.workerId}`,
            );
          }
          // Only what the save needs of the previous header: one that no longer fits the model whole is
          // written over (the pass that built this version had its grant from it: readableHeader).
          const previous = snap.exists ? HeaderCore.parse(snap.data()) : null;
          // This very snapshot stored already: this save's own commit, landed with its answer lost — the
          // client then runs the transaction again — or the same content saved by another delivery. Saved, not
          // a race lost: read as lost, the pass published nothing, and the worker waited a tick for a version
          // that may carry a new epoch (its reports refused stale_epoch meanwhile).
          if (previous && previous.version === header.version && previous.checksum === header.checksum)
            return;
          if (previous && previous.version >= header.version) {
            throw new WorkerStoreError(
              'conflict',
              `the snapshot of ${header.workerId} is already at version ${previous.version}, not saving ${header.version}`,
            );
          }
          throwIfGivenUp(signal); // again after the reads: a body given up while waiting on them writes nothing
          const chunks = partsOf(full.proxies);
          const parts = chunks.length;
          for (const [i, proxies] of chunks.entries()) {
            tx.set(ref.collection(PARTS).doc(String(i)), { index: i, version: full.version, proxies });
          }
          for (let i = parts; i < (previous?.parts ?? 0); i++)
            tx.delete(ref.collection(PARTS).doc(String(i)));
          tx.set(ref, {
            ...headerFields(header),
            proxies: full.proxies.length,
            parts,
            routing: plain(full.routing),
          });
        }),
      );
    } catch (err) {
      throw workerStoreFailure(err, `store the snapshot of ${header.workerId}`);
    }
  }

  /**
   * Deletes the parts (the bulk: up to ~1 MiB each) of at most `limit` snapshots whose grant ended before
   * `cutoff`, keeping each small header with its version so that a worker id that comes back continues
   * above it (the gateway refuses a lower version: domain/gateway/acceptance.ts). The grant is cleared
   * with them, which takes the header out of the range this query reads (each header is swept once) and
   * means what a lapsed grant means anyway: nothing held. One transaction per header, re-checking the
   * grant, so a snapshot saved for a returning worker meanwhile is never touched. A header whose
   * transaction fails (aborted by contention, Firestore unavailable) is reported and skipped: the ones
   * before it are swept already and must be reported as such, and the ones after it still get their turn.
   */
  async sweepParts(cutoff: Date, limit: number, now: Date): Promise<SweepResult> {
    let old: QuerySnapshot;
    try {
      const query = this.db
        .collection(Collections.snapshots)
        .where('grantedUntil', '<', Timestamp.fromDate(cutoff))
        .limit(limit);
      old = await boundedCall(this.deadlines.call, 'list old snapshot headers', () => query.get());
    } catch (err) {
      throw workerStoreFailure(err, 'list old snapshot headers');
    }
    const out: SweepResult = { swept: [], failed: [] };
    for (const d of old.docs) {
      try {
        if (await this.sweepOne(d.id, cutoff, now)) out.swept.push(d.id);
      } catch (err) {
        out.failed.push({ workerId: d.id, kind: workerStoreFailure(err, 'sweep').kind });
      }
    }
    return out;
  }

  private sweepOne(workerId: string, cutoff: Date, now: Date): Promise<boolean> {
    const ref = this.ref(workerId);
    return boundedCall(this.deadlines.call, `sweep the snapshot of ${workerId}`, (signal) =>
      this.db.runTransaction(async (tx) => {
        throwIfGivenUp(signal);
        const snap = await tx.get(ref);
        throwIfGivenUp(signal); // again after the read: a body given up while waiting on it writes nothing
        const h = HeaderDoc.safeParse(snap.data());
        if (!h.success) {
          // Edited by hand into something no pass can use: leave it for whoever fixes it, but take it
          // out of this query's range so that it cannot hold the batch up tick after tick.
          const g = snap.get('grantedUntil');
          if (g instanceof Timestamp && g.toDate() < cutoff) tx.update(ref, { grantedUntil: null });
          return false;
        }
        if (!h.data.grantedUntil || h.data.grantedUntil >= cutoff) return false;
        for (let i = 0; i < h.data.parts; i++) tx.delete(ref.collection(PARTS).doc(String(i)));
        tx.update(ref, { parts: 0, grantedUntil: null, partsSweptAt: Timestamp.fromDate(now) });
        return true;
      }),
    );
  }

  async patchHeader(
    workerId: string,
    patch: Partial<Pick<SnapshotHeader, 'grantedUntil' | 'draining' | 'sentAt'>>,
    guard?: { lockHolder: string },
  ): Promise<void> {
    const data: DocumentData = {};
    if (patch.grantedUntil !== undefined) data.grantedUntil = tsOrNull(patch.grantedUntil);
    if (patch.draining !== undefined) data.draining = patch.draining;
    if (patch.sentAt !== undefined) data.sentAt = tsOrNull(patch.sentAt);
    const ref = this.ref(workerId);
    try {
      const what = `update the snapshot header of ${workerId}`;
      if (!guard) {
        await boundedCall(this.deadlines.call, what, () => ref.update(data));
        return;
      }
      const state = this.db.collection(Collections.ownership).doc(STATE_DOC);
      await boundedCall(this.deadlines.call, what, (signal) =>
        this.db.runTransaction(async (tx) => {
          throwIfGivenUp(signal);
          // As in save(): a pass taking the lock is ordered before this patch (refused) or after it.
          if (lockHolderOf(await tx.get(state)) !== guard.lockHolder) {
            throw new WorkerStoreError(
              'conflict',
              `the planner lock is no longer held by ${guard.lockHolder}: not patching the header of ${workerId}`,
            );
          }
          throwIfGivenUp(signal); // again after the read: a body given up while waiting on it writes nothing
          tx.update(ref, data);
        }),
      );
    } catch (err) {
      throw workerStoreFailure(err, `update the snapshot header of ${workerId}`);
    }
  }

  private async readHeader(workerId: string): Promise<z.infer<typeof HeaderDoc> | null> {
    try {
      const snap = await boundedCall(this.deadlines.call, `read the snapshot header of ${workerId}`, () =>
        this.ref(workerId).get(),
      );
      return snap.exists ? HeaderDoc.parse(snap.data()) : null;
    } catch (err) {
      throw workerStoreFailure(err, `read the snapshot header of ${workerId}`);
    }
  }
}

/** The proxies as plain JSON values, in parts of at most PART_SIZE entries and PART_BYTES of JSON. */
function partsOf(proxies: readonly GatewayProxy[]): unknown[][] {
  const parts: string[][] = [];
  let current: string[] = [];
  let bytes = 0;
  for (const p of proxies) {
    const json = JSON.stringify(p);
    const size = Buffer.byteLength(json) + 1;
    if (current.length > 0 && (current.length >= PART_SIZE || bytes + size > PART_BYTES)) {
      parts.push(current);
      current = [];
      bytes = 0;
    }
    current.push(json);
    bytes += size;
  }
  if (current.length > 0) parts.push(current);
  // JSON round trip, as plain() does: drops undefined optionals, which Firestore refuses. The instants as
  // Timestamps (snapshot-part-times.ts): a Timestamp stores smaller than its text, so the bound holds.
  return parts.map((part) => (JSON.parse(`[${part.join(',')}]`) as unknown[]).map(storedEntry));
}

/** Who holds the planner lock (ownership/state.lock.holder), or null. */
function lockHolderOf(state: DocumentSnapshot | null): string | null {
  const holder = state?.exists ? state.get('lock.holder') : undefined;
  return typeof holder === 'string' ? holder : null;
}

/**
 * The headers of `docs`. One that no longer fits the model whole is left out — or, with `salvage` (the
 * pass's view), read as readableHeader reads it, left out only when not even its version can be read.
 */
function addHeaders(
  out: Map<string, SnapshotHeader>,
  docs: readonly DocumentSnapshot[],
  salvage: boolean,
): void {
  for (const d of docs) {
    if (!d.exists) continue;
    const h = salvage ? readableHeader(d.id, d.data()) : wholeHeader(d.data());
    if (h) out.set(d.id, h);
  }
}

function wholeHeader(data: DocumentData | undefined): SnapshotHeader | null {
  const h = HeaderDoc.safeParse(data);
  return h.success ? toHeader(h.data) : null;
}

/**
 * A header as the pass reads it. One that no longer fits the model whole keeps its version and grant: a
 * header left out reads as "never granted anything", and the planner would move that worker's proxies at
 * once while the worker may still hold a snapshot granting them — two owners until that grant ends. The
 * rest reads as nothing sent (no digest, no session, no drains, no recent versions): the pass builds the
 * worker a new version, whose save writes the header whole again.
 */
function readableHeader(workerId: string, data: DocumentData | undefined): SnapshotHeader | null {
  const whole = wholeHeader(data);
  if (whole) return whole;
  const core = HeaderCore.safeParse(data);
  if (!core.success) return null;
  return {
    workerId,
    version: core.data.version,
    ownershipEpoch: 0,
    checksum: '',
    contentDigest: '',
    sessionId: null,
    generatedAt: new Date(0),
    validUntil: new Date(0),
    grantedUntil: core.data.grantedUntil,
    draining: {},
    recent: [],
    sentAt: null,
    proxies: 0,
    salvaged: true,
  };
}

function headerFields(h: SnapshotHeader): DocumentData {
  return {
    workerId: h.workerId,
    version: h.version,
    ownershipEpoch: h.ownershipEpoch,
    checksum: h.checksum,
    contentDigest: h.contentDigest,
    sessionId: h.sessionId,
    generatedAt: Timestamp.fromDate(h.generatedAt),
    validUntil: Timestamp.fromDate(h.validUntil),
    grantedUntil: tsOrNull(h.grantedUntil),
    draining: h.draining,
    recent: h.recent.map((r) => ({ version: r.version, epoch: r.epoch, checksum: r.checksum })),
    sentAt: tsOrNull(h.sentAt),
    ackOwed: h.ackOwed ? { version: h.ackOwed.version, since: Timestamp.fromDate(h.ackOwed.since) } : null,
  };
}

function toHeader(d: z.infer<typeof HeaderDoc>): SnapshotHeader {
  return {
    workerId: d.workerId,
    version: d.version,
    ownershipEpoch: d.ownershipEpoch,
    checksum: d.checksum,
    contentDigest: d.contentDigest,
    sessionId: d.sessionId,
    generatedAt: d.generatedAt,
    validUntil: d.validUntil,
    grantedUntil: d.grantedUntil,
    draining: d.draining,
    recent: d.recent,
    sentAt: d.sentAt,
    ackOwed: d.ackOwed,
    proxies: d.proxies,
    routing: d.routing,
  };
}
