// Gateway ownership as the workers' store keeps it (shared/src/adapters/firestore/ownership-store.ts):
// `ownership/state` holds the epoch; `ownership/shard-NN` hold `proxies.<name> = {owner, since,
// drainEpoch}`. Decoded defensively: the page shows what is there and never fails on a stranger shape.
import type { DocumentData } from '@google-cloud/firestore';
import type { OwnershipView } from './view-model.js';

export function decodeOwnershipShard(id: string, d: DocumentData): Map<string, OwnershipView> | null {
  if (!id.startsWith('shard-')) return null;
  const out = new Map<string, OwnershipView>();
  const proxies = d.proxies;
  if (!proxies || typeof proxies !== 'object') return out;
  for (const [name, raw] of Object.entries(proxies as Record<string, unknown>)) {
    const r = (raw ?? {}) as { owner?: unknown; since?: unknown; drainEpoch?: unknown };
    if (typeof r.owner !== 'string' || r.owner === '') continue;
    out.set(name, {
      owner: r.owner,
      since: typeof r.since === 'number' ? r.since : 0,
      drainEpoch: typeof r.drainEpoch === 'number' ? r.drainEpoch : null,
    });
  }
  return out;
}
