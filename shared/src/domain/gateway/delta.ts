// Deltas (control-plane seed §3): applied only on the exact base version, and only when the result's
// checksum equals the one the controller computed over its own full snapshot; otherwise the worker
// drops the delta and asks for a full snapshot. buildDelta is the controller's side of the same rule.
import type { GatewayDelta, GatewayProxy, GatewaySnapshot } from '../../messages/gateway-snapshot.js';
import { checksumSlices, fastSnapshotChecksum } from '../snapshots/canonical-fast.js';
import { canonicalJson, canonicalProxy, canonicalRoute, type Sha256Hex } from './canonical.js';
import { drain, type Sliced } from './slices.js';

export type DeltaReject = 'base_mismatch' | 'checksum_mismatch';
export type DeltaResult = { ok: true; snapshot: GatewaySnapshot } | { ok: false; reject: DeltaReject };

const byName = (a: GatewayProxy, b: GatewayProxy): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export function applyDelta(base: GatewaySnapshot, delta: GatewayDelta, sha256: Sha256Hex): DeltaResult {
  return drain(applyDeltaSlices(base, delta, sha256));
}

/** applyDelta(), its checksum yielding between slices of the proxies (slices.ts). */
export function* applyDeltaSlices(
  base: GatewaySnapshot,
  delta: GatewayDelta,
  sha256: Sha256Hex,
): Sliced<DeltaResult> {
  if (delta.baseVersion !== base.version || delta.workerId !== base.workerId) {
    return { ok: false, reject: 'base_mismatch' };
  }
  const removed = new Set(delta.removals);
  const upserted = new Map(delta.upserts.map((p) => [p.name, p]));
  const kept = base.proxies.filter((p) => !removed.has(p.name) && !upserted.has(p.name));
  const proxies = [...kept, ...delta.upserts.filter((p) => !removed.has(p.name))].sort(byName);
  const snapshot: GatewaySnapshot = {
    kind: 'full',
    schemaVersion: delta.schemaVersion,
    version: delta.version,
    ownershipEpoch: delta.ownershipEpoch,
    workerId: delta.workerId,
    generatedAt: delta.generatedAt,
    validUntil: delta.validUntil,
    routing: delta.routing ?? base.routing,
    proxies,
    checksum: delta.checksum,
  };
  if ((yield* checksumSlices(snapshot, sha256)) !== delta.checksum)
    return { ok: false, reject: 'checksum_mismatch' };
  return { ok: true, snapshot };
}

/** The delta that turns `base` into `next` (both full snapshots of the same worker). */
export function buildDelta(base: GatewaySnapshot, next: GatewaySnapshot, sha256: Sha256Hex): GatewayDelta {
  const before = new Map(base.proxies.map((p) => [p.name, canonicalJson(canonicalProxy(p))]));
  const after = new Set(next.proxies.map((p) => p.name));
  const upserts = next.proxies.filter((p) => before.get(p.name) !== canonicalJson(canonicalProxy(p)));
  const removals = base.proxies.filter((p) => !after.has(p.name)).map((p) => p.name);
  const routingChanged =
    canonicalJson(base.routing.map(canonicalRoute)) !== canonicalJson(next.routing.map(canonicalRoute));
  return {
    kind: 'delta',
    schemaVersion: next.schemaVersion,
    version: next.version,
    baseVersion: base.version,
    ownershipEpoch: next.ownershipEpoch,
    workerId: next.workerId,
    generatedAt: next.generatedAt,
    validUntil: next.validUntil,
    upserts,
    removals,
    ...(routingChanged ? { routing: next.routing } : {}),
    checksum: fastSnapshotChecksum(next, sha256),
  };
}
