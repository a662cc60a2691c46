// Support for the lease tests: writing proxies the way the admin API / reconcile store them, and reading
// back the lease service's documents to check invariants from what is stored.
import { type DocumentData, type Firestore, Timestamp } from '@google-cloud/firestore';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { decodeLease } from '../../shared/src/adapters/firestore/lease-converter.js';
import { PROXIES_COLLECTION } from '../../shared/src/adapters/firestore/proxy-cache.js';
import { type ProxyOptions, proxy } from '../../shared/src/domain/leases/fixtures.unit.js';
import type { Lease } from '../../shared/src/domain/leases/model.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';

export { type ProxyOptions, proxy };

function toTimestamps(value: unknown): unknown {
  if (value instanceof Date) return Timestamp.fromDate(value);
  if (Array.isArray(value)) return value.map(toTimestamps);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, toTimestamps(v)]),
    );
  }
  return value;
}

/** Stores a proxy document (TODO(reconcile): use the shared proxy converter once it lands). */
export async function writeProxy(db: Firestore, p: ProxyResource): Promise<void> {
  await db
    .collection(PROXIES_COLLECTION)
    .doc(p.name)
    .set(toTimestamps(p) as DocumentData);
}

export async function writeFleet(db: Firestore, proxies: ProxyResource[]): Promise<void> {
  for (let i = 0; i < proxies.length; i += 400) {
    const batch = db.batch();
    for (const p of proxies.slice(i, i + 400)) {
      batch.set(db.collection(PROXIES_COLLECTION).doc(p.name), toTimestamps(p) as DocumentData);
    }
    await batch.commit();
  }
}

export async function storedLeases(db: Firestore): Promise<Lease[]> {
  const snap = await db.collection(LEASE_COLLECTIONS.leases).get();
  return snap.docs.map((d) => {
    const lease = decodeLease(d.data());
    if (!lease) throw new Error(`lease ${d.id} does not decode`);
    return lease;
  });
}

/**
 * The most leases (an exclusive one counting as `capacity`) any proxy carried at any instant, from the
 * stored grant, expiry and release times: each lease occupies [grantedAt, min(expiresAt, releasedAt)).
 */
export function peakUsage(
  leases: readonly Lease[],
  capacityOf: (proxy: string) => number,
): Map<string, number> {
  const events = new Map<string, Array<{ t: number; d: number }>>();
  for (const l of leases) {
    const end = Math.min(l.expiresAt.getTime(), l.releasedAt?.getTime() ?? Number.POSITIVE_INFINITY);
    const weight = l.exclusive ? capacityOf(l.proxy) : 1;
    const list = events.get(l.proxy) ?? [];
    list.push({ t: l.grantedAt.getTime(), d: weight }, { t: end, d: -weight });
    events.set(l.proxy, list);
  }
  const peaks = new Map<string, number>();
  for (const [p, list] of events) {
    // Ends before starts at the same instant: the intervals are half-open.
    list.sort((a, b) => a.t - b.t || a.d - b.d);
    let now = 0;
    let peak = 0;
    for (const e of list) {
      now += e.d;
      peak = Math.max(peak, now);
    }
    peaks.set(p, peak);
  }
  return peaks;
}
