// How many proxies are in each phase (operator seed §9 `proxy_operator_proxies{phase}`), counted by
// Firestore aggregation queries: one per phase, each billed as one read per 1,000 index entries it counts,
// instead of reading every proxy document (docs/cost.md). The single-field index on status.phase is
// automatic.
import type { Firestore } from '@google-cloud/firestore';
import { Phase } from '../../domain/proxy.js';
import { Collections } from './collections.js';

export type PhaseCounts = Record<Phase, number>;

export async function countProxiesByPhase(db: Firestore): Promise<PhaseCounts> {
  const proxies = db.collection(Collections.proxies);
  const counts = await Promise.all(
    Phase.options.map(async (phase) => {
      const snap = await proxies.where('status.phase', '==', phase).count().get();
      return [phase, snap.data().count] as const;
    }),
  );
  return Object.fromEntries(counts) as PhaseCounts;
}
