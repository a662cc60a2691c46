// Gateway ownership as the workers' store keeps it (shared/src/adapters/firestore/ownership-store.ts):
// `ownership/state` holds the epoch; `ownership/shard-NN` hold `proxies.<name> = {owner, since,
// drainEpoch, uid}`. Decoded defensively: the page shows what is there and never fails on a stranger shape.
import type { DocumentData } from '@google-cloud/firestore';
import type { StoredOwnership } from './view-model.js';

export function decodeOwnershipShard(id: string, d: DocumentData): Map<string, StoredOwnership> | null {
  if (!id.startsWith('shard-')) return null;
  const out = new Map<string, StoredOwnership>();
  const proxies = d.proxies;
  if (!proxies || typeof proxies !== 'object') return out;
  for (const [name, raw] of Object.entries(proxies as Record<string, unknown>)) {
    const r = (raw ?? {}) as { owner?: unknown; since?: unknown; drainEpoch?: unknown; uid?: unknown };
    if (typeof r.owner !== 'string' || r.owner === '') continue;
    out.set(name, {
      owner: r.owner,
      since: typeof r.since === 'number' ? r.since : 0,
      drainEpoch: typeof r.drainEpoch === 'number' ? r.drainEpoch : null,
      uid: typeof r.uid === 'string' && r.uid !== '' ? r.uid : null,
    });
  }
  return out;
}
