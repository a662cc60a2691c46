// HealthStore on Firestore: `health/{proxy}` documents with named fields and Timestamps, readable in the
// console (verdict, egressProblem, latencyMillis, tracks.BASIC.consecutiveOk, …).
import { type DocumentData, type Firestore, Timestamp } from '@google-cloud/firestore';
import type { PassiveTrack } from '../../domain/health/passive-track.js';
import type { ProxyHealthState } from '../../domain/health/proxy-health.js';
import type { TrackKey, TrackState, Verdict } from '../../domain/health/verdict.js';
import type { HealthStore } from '../../ports/health-store.js';
import { Collections } from './collections.js';

const BATCH = 400;

export class FirestoreHealthStore implements HealthStore {
  constructor(private readonly db: Firestore) {}

  private col() {
    return this.db.collection(Collections.health);
  }

  async get(name: string): Promise<ProxyHealthState | null> {
    const snap = await this.col().doc(name).get();
    return snap.exists ? healthFromDoc(snap.data()!) : null;
  }

  async getMany(names: string[]): Promise<Map<string, ProxyHealthState>> {
    const out = new Map<string, ProxyHealthState>();
    for (let i = 0; i < names.length; i += BATCH) {
      const refs = names.slice(i, i + BATCH).map((n) => this.col().doc(n));
      if (refs.length === 0) continue;
      const snaps = await this.db.getAll(...refs);
      for (const s of snaps) if (s.exists) out.set(s.id, healthFromDoc(s.data()!));
    }
    return out;
  }

  /** Each document is written whole (set, no merge): a dropped track disappears, and a `TARGET:<route>`
   *  key is only ever a map key — as an update() field path its ':' would need backtick quoting. */
  async writeMany(states: ProxyHealthState[]): Promise<void> {
    for (let i = 0; i < states.length; i += BATCH) {
      const batch = this.db.batch();
      for (const s of states.slice(i, i + BATCH)) batch.set(this.col().doc(s.proxy), healthToDoc(s));
      await batch.commit();
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

export function healthToDoc(s: ProxyHealthState): DocumentData {
  return {
    proxy: s.proxy,
    instance: s.instance,
    verdict: s.verdict,
    egressProblem: s.egressProblem,
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

function passiveFromDoc(v: unknown): PassiveTrack | null {
  if (typeof v !== 'object' || v === null) return null;
  const p = v as Record<string, unknown>;
  if (!(p.lastSignalAt instanceof Timestamp)) return null;
  return {
    track: {
      verdict: (p.verdict ?? null) as Verdict | null,
      consecutiveOk: Number(p.consecutiveOk ?? 0),
      consecutiveFail: Number(p.consecutiveFail ?? 0),
    },
    lastSignalAt: p.lastSignalAt.toDate(),
  };
}

/** Decodes a `health/{proxy}` document defensively (the fleet page's listener reads them too). */
export function healthFromDoc(d: DocumentData): ProxyHealthState {
  const tracks: Partial<Record<TrackKey, TrackState>> = {};
  for (const [k, v] of Object.entries((d.tracks ?? {}) as Record<string, TrackState>)) {
    tracks[k as TrackKey] = {
      verdict: (v.verdict ?? null) as Verdict | null,
      consecutiveOk: Number(v.consecutiveOk ?? 0),
      consecutiveFail: Number(v.consecutiveFail ?? 0),
    };
  }
  return {
    proxy: String(d.proxy),
    instance: String(d.instance ?? ''),
    verdict: (d.verdict ?? null) as Verdict | null,
    egressProblem: (d.egressProblem ?? null) as string | null,
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
