// HealthStore on Firestore: `health/{proxy}` documents with named fields and Timestamps, readable in the
// console (verdict, egressProblem, latencyMillis, tracks.BASIC.consecutiveOk, …). Each read carries the
// document's updateTime as its version, and each write is preconditioned on it (recipes §7: preconditions
// rather than contended transactions): `create()` where there was no document, `lastUpdateTime` otherwise.
// Each write also stamps the document with an id of its own (write-mark.ts): a commit the client resent
// after it landed is no race lost, nor is one whose call failed after it landed a failed write, so the
// probe neither decides again on top of its own result nor probes its window again (counting one probe
// twice).
import {
  type DocumentData,
  type DocumentReference,
  type Firestore,
  Timestamp,
  type WriteBatch,
} from '@google-cloud/firestore';
import type { PassiveTrack } from '../../domain/health/passive-track.js';
import type { ProxyHealthState } from '../../domain/health/proxy-health.js';
import type { TrackKey, TrackState, Verdict } from '../../domain/health/verdict.js';
import type {
  HealthStore,
  HealthWrite,
  HealthWriteResult,
  VersionedHealth,
} from '../../ports/health-store.js';
import { Collections } from './collections.js';
import { timestampOfVersion, versionOf } from './proxy-converter.js';
import { ALREADY_EXISTS, codeOf, FAILED_PRECONDITION, NOT_FOUND } from './worker-errors.js';
import { carriesWrite, newWriteId, WRITE_ID } from './write-mark.js';

const BATCH = 400;
/** Writes sent at once when a batch lost a race and each is retried on its own to learn which. */
const SINGLES_IN_FLIGHT = 20;

export class FirestoreHealthStore implements HealthStore {
  constructor(private readonly db: Firestore) {}

  private col() {
    return this.db.collection(Collections.health);
  }

  async get(name: string): Promise<ProxyHealthState | null> {
    const snap = await this.col().doc(name).get();
    return snap.exists ? healthFromDoc(snap.data()!) : null;
  }

  async getMany(names: string[]): Promise<Map<string, VersionedHealth>> {
    const out = new Map<string, VersionedHealth>();
    for (let i = 0; i < names.length; i += BATCH) {
      const refs = names.slice(i, i + BATCH).map((n) => this.col().doc(n));
      if (refs.length === 0) continue;
      const snaps = await this.db.getAll(...refs);
      for (const s of snaps)
        if (s.exists && s.updateTime)
          out.set(s.id, { state: healthFromDoc(s.data()!), version: versionOf(s.updateTime) });
    }
    return out;
  }

  async writeMany(writes: HealthWrite[]): Promise<HealthWriteResult[]> {
    const results: HealthWriteResult[] = [];
    for (let i = 0; i < writes.length; i += BATCH) {
      try {
        results.push(...(await this.writeChunk(writes.slice(i, i + BATCH))));
      } catch (err) {
        // Nothing of the call landed yet: it failed as a whole. Once a chunk has, the rest answer
        // `failed` (the port's contract): a caller that took the throw for "nothing stored" would probe
        // and count again what landed.
        if (!results.includes('written')) throw err;
        results.push(...writes.slice(i).map((): HealthWriteResult => 'failed'));
        break;
      }
    }
    return results;
  }

  /** One atomic commit when no other pass wrote any of them since they were read (the usual case: one
   *  round trip, as before the preconditions); when one lost, the commit wrote nothing and each is sent
   *  on its own, so that only the ones that lost report a conflict. */
  private async writeChunk(chunk: HealthWrite[]): Promise<HealthWriteResult[]> {
    if (chunk.length === 0) return [];
    const batch = this.db.batch();
    const writeId = newWriteId();
    const refs = chunk.map((w) => this.col().doc(w.state.proxy));
    if (chunk.every((w, i) => stageHealthWrite(batch, refs[i]!, w, writeId))) {
      try {
        await batch.commit();
        return chunk.map(() => 'written');
      } catch (err) {
        // The commit is atomic: one document carrying its id (another pass may have written the others
        // since) says all of it landed, on an attempt whose answer was lost — also when the call then
        // failed otherwise (DEADLINE_EXCEEDED, a last UNAVAILABLE). Thrown, the run would record this
        // window as not stored, and the next run probe it again and count these results twice.
        if (await this.carries(refs, writeId)) return chunk.map(() => 'written');
        if (!isHealthConflict(err)) throw err;
      }
    }
    const results: HealthWriteResult[] = [];
    for (let i = 0; i < chunk.length; i += SINGLES_IN_FLIGHT) {
      const settled = await Promise.allSettled(
        chunk.slice(i, i + SINGLES_IN_FLIGHT).map((w) => this.writeOne(w)),
      );
      const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      // Singles are separate commits: some may land while another fails. None landed: the chunk failed.
      if (
        failure &&
        !results.includes('written') &&
        !settled.some((s) => s.status === 'fulfilled' && s.value === 'written')
      )
        throw failure.reason;
      results.push(...settled.map((s): HealthWriteResult => (s.status === 'fulfilled' ? s.value : 'failed')));
    }
    return results;
  }

  private async writeOne(w: HealthWrite): Promise<HealthWriteResult> {
    const batch = this.db.batch();
    const writeId = newWriteId();
    const ref = this.col().doc(w.state.proxy);
    if (!stageHealthWrite(batch, ref, w, writeId)) return 'conflict';
    try {
      await batch.commit();
      return 'written';
    } catch (err) {
      // Landed on an attempt whose answer was lost, whatever the call then failed with (writeChunk).
      if (await this.carries([ref], writeId)) return 'written';
      if (!isHealthConflict(err)) throw err;
      return 'conflict';
    }
  }

  /** Whether any of these documents was last written by the write `writeId` (false when the read fails:
   *  the commit's own answer stands, as before the check). */
  private async carries(refs: DocumentReference[], writeId: string): Promise<boolean> {
    try {
      const snaps = await this.db.getAll(...refs);
      return snaps.some((s) => carriesWrite(s, writeId));
    } catch {
      return false;
    }
  }

  async deleteMany(names: string[]): Promise<void> {
    for (let i = 0; i < names.length; i += BATCH) {
      const batch = this.db.batch();
      for (const n of names.slice(i, i + BATCH)) batch.delete(this.col().doc(n));
      await batch.commit();
    }
  }

  async listNames(): Promise<string[]> {
    const refs = await this.col().listDocuments();
    return refs.map((r) => r.id);
  }
}

/**
 * Stages one health write in `batch` on top of the version it was decided on: `create()` when there was no
 * document (a second first writer fails ALREADY_EXISTS), else `update()` under `lastUpdateTime` (fails
 * when the document changed or was deleted since). The update names every field healthToDoc writes — all
 * the fields the document has — and each value (`tracks`, `passive`) replaces the stored one whole, so the
 * document is still rewritten whole as by `set()`: a dropped track disappears, and a `TARGET:<route>` key
 * is only ever a map key (as an update() field path its ':' would need backtick quoting). False when
 * `base` is no version token (nothing to write on top of: a conflict), with nothing staged.
 */
export function stageHealthWrite(
  batch: WriteBatch,
  ref: DocumentReference,
  w: HealthWrite,
  writeId: string,
): boolean {
  const doc = { ...healthToDoc(w.state), [WRITE_ID]: writeId };
  if (w.base === null) {
    batch.create(ref, doc);
    return true;
  }
  const at = timestampOfVersion(w.base);
  if (!at) return false;
  batch.update(ref, doc, { lastUpdateTime: at });
  return true;
}

/** A preconditioned write that lost a race: changed since read, created meanwhile, or deleted meanwhile. */
export function isHealthConflict(err: unknown): boolean {
  const code = codeOf(err);
  return code === FAILED_PRECONDITION || code === ALREADY_EXISTS || code === NOT_FOUND;
}

export function healthToDoc(s: ProxyHealthState): DocumentData {
  return {
    proxy: s.proxy,
    instance: s.instance,
    verdict: s.verdict,
    activeVerdict: s.activeVerdict ?? null,
    egressProblem: s.egressProblem,
    basicProblem: s.basicProblem ?? null,
    latencyMillis: s.latency.reportedMs,
    latencyReportedAt: s.latency.reportedAt ? Timestamp.fromDate(s.latency.reportedAt) : null,
    tracks: s.tracks,
    transitionAt: s.transitionAt ? Timestamp.fromDate(s.transitionAt) : null,
    latencyHistory: (s.latencyHistory ?? []).map((h) => ({ ms: h.ms, at: Timestamp.fromDate(h.at) })),
    // The gateways' evidence (passive-track.ts), flat for the console; null when they said nothing bad.
    passive: s.passive
      ? { ...s.passive.track, lastSignalAt: Timestamp.fromDate(s.passive.lastSignalAt) }
      : null,
  };
}

const VERDICTS: ReadonlySet<unknown> = new Set<Verdict>(['AVAILABLE', 'SUSPECT', 'UNHEALTHY']);
/** A stored verdict, or none: a value edited out of the three reads as "not decided yet". */
const verdictOf = (v: unknown): Verdict | null => (VERDICTS.has(v) ? (v as Verdict) : null);
/** A stored counter, or 0 for anything that is not a count (NaN would never reach a threshold). */
const countOf = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);

/** One stored track; null for an entry that is no object (a console edit setting it to null). */
function trackFromDoc(v: unknown): TrackState | null {
  if (typeof v !== 'object' || v === null) return null;
  const t = v as Record<string, unknown>;
  return {
    verdict: verdictOf(t.verdict),
    consecutiveOk: countOf(t.consecutiveOk),
    consecutiveFail: countOf(t.consecutiveFail),
  };
}

function passiveFromDoc(v: unknown): PassiveTrack | null {
  const track = trackFromDoc(v);
  const at = (v as Record<string, unknown> | null)?.lastSignalAt;
  if (!track || !(at instanceof Timestamp)) return null;
  return { track, lastSignalAt: at.toDate() };
}

/**
 * Decodes a `health/{proxy}` document defensively (the fleet page's listener reads them too): whatever a
 * console edit left in it, a reconcile pass or a probe tick reading it must not throw — such a throw was
 * retried and dead-lettered, and published again on every drift slot, for good. What does not fit reads
 * as not decided: the track starts again.
 */
export function healthFromDoc(d: DocumentData): ProxyHealthState {
  const tracks: Partial<Record<TrackKey, TrackState>> = {};
  const stored =
    typeof d.tracks === 'object' && d.tracks !== null ? (d.tracks as Record<string, unknown>) : {};
  for (const [k, v] of Object.entries(stored)) {
    const track = trackFromDoc(v);
    if (track) tracks[k as TrackKey] = track;
  }
  return {
    proxy: String(d.proxy),
    instance: String(d.instance ?? ''),
    verdict: verdictOf(d.verdict),
    // None stored (a document written before the field; null): left out, keptActiveVerdict derives it.
    ...(VERDICTS.has(d.activeVerdict) ? { activeVerdict: d.activeVerdict as Verdict } : {}),
    egressProblem: typeof d.egressProblem === 'string' ? d.egressProblem : null,
    ...(typeof d.basicProblem === 'string' ? { basicProblem: d.basicProblem } : {}),
    latency: {
      reportedMs: typeof d.latencyMillis === 'number' ? d.latencyMillis : null,
      reportedAt: d.latencyReportedAt instanceof Timestamp ? d.latencyReportedAt.toDate() : null,
    },
    tracks,
    transitionAt: d.transitionAt instanceof Timestamp ? d.transitionAt.toDate() : null,
    latencyHistory: Array.isArray(d.latencyHistory)
      ? (d.latencyHistory as Array<{ ms?: unknown; at?: unknown }>).flatMap((h) =>
          typeof h?.ms === 'number' && h.at instanceof Timestamp ? [{ ms: h.ms, at: h.at.toDate() }] : [],
        )
      : [],
    passive: passiveFromDoc(d.passive),
  };
}
