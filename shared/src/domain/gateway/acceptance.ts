// Whether a worker takes a full snapshot it was sent (control-plane seed §2–3): data of a lower
// ownership epoch is refused; within an epoch versions only move forward, and a re-delivery of the
// version it already runs is a harmless duplicate (Pub/Sub is at-least-once). A higher epoch starts a
// new ownership term, so its versions are taken whatever the previous term reached.
import type { GatewaySnapshot } from '../../messages/gateway-snapshot.js';
import { checksumSlices } from '../snapshots/canonical-fast.js';
import type { Sha256Hex } from './canonical.js';
import { drain, type Sliced } from './slices.js';

export interface AppliedVersion {
  version: number;
  ownershipEpoch: number;
  checksum: string;
}

export type SnapshotReject =
  | 'wrong_worker'
  | 'checksum_mismatch'
  | 'stale_epoch'
  | 'stale_version'
  | 'version_conflict';

export type SnapshotDecision =
  | { action: 'apply' }
  | { action: 'duplicate' }
  | { action: 'reject'; reason: SnapshotReject };

/** Epoch and version ordering shared by full snapshots and deltas. */
export function orderAgainst(
  current: AppliedVersion | null,
  incoming: { version: number; ownershipEpoch: number; checksum: string },
): SnapshotDecision {
  if (!current || incoming.ownershipEpoch > current.ownershipEpoch) return { action: 'apply' };
  if (incoming.ownershipEpoch < current.ownershipEpoch) return { action: 'reject', reason: 'stale_epoch' };
  if (incoming.version < current.version) return { action: 'reject', reason: 'stale_version' };
  if (incoming.version === current.version) {
    return incoming.checksum === current.checksum
      ? { action: 'duplicate' }
      : { action: 'reject', reason: 'version_conflict' };
  }
  return { action: 'apply' };
}

export function decideSnapshot(
  current: AppliedVersion | null,
  incoming: GatewaySnapshot,
  ctx: { workerId?: string; sha256: Sha256Hex },
): SnapshotDecision {
  return drain(decideSnapshotSlices(current, incoming, ctx));
}

/** decideSnapshot(), its checksum yielding between slices of the proxies (slices.ts). */
export function* decideSnapshotSlices(
  current: AppliedVersion | null,
  incoming: GatewaySnapshot,
  ctx: { workerId?: string; sha256: Sha256Hex },
): Sliced<SnapshotDecision> {
  if (ctx.workerId !== undefined && incoming.workerId !== ctx.workerId) {
    return { action: 'reject', reason: 'wrong_worker' };
  }
  // The checksum — a hash of the whole canonical snapshot, the costliest part of taking one — only for
  // what could be applied: a re-delivery or a resend of what runs (claiming the checksum it runs under),
  // and anything older, are answered from the version and epoch alone. Nothing of their content is used.
  const order = orderAgainst(current, incoming);
  if (order.action === 'duplicate') return order;
  if (order.action === 'reject' && order.reason !== 'version_conflict') return order;
  if ((yield* checksumSlices(incoming, ctx.sha256)) !== incoming.checksum) {
    return { action: 'reject', reason: 'checksum_mismatch' };
  }
  return order;
}
