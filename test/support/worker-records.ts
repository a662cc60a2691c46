// Worker documents and snapshot headers as earlier passes and registrations leave them, for tests that
// need many workers in given states (dead instances, recently lapsed, live) without running gateways.
import { DEFAULT_ROUTING } from '../../shared/src/domain/snapshots/content.js';
import {
  GATEWAY_SNAPSHOT_SCHEMA_VERSION,
  type GatewayProxy,
} from '../../shared/src/messages/gateway-snapshot.js';
import type { WorkerRecord } from '../../shared/src/ports/workers.js';
import type { SnapshotHeader, SnapshotStore } from '../../shared/src/ports/workers-snapshots.js';

/**
 * A worker whose session ends at `validUntil` (registered one default session TTL before), and which has
 * ACKed a snapshot, as a worker serving since earlier passes has: the planner gives proxies only to a
 * session that has (plan-pass.ts assignable). The bound is version 0 at epoch 0, behind every snapshot a
 * pass or storeSnapshot stores, so a pass finds the worker lagging whatever is stored and re-sends once
 * quiet — as these tests were written for, when the bound was unset (worker-steps.ts).
 */
export function record(workerId: string, validUntil: Date): WorkerRecord {
  return {
    session: {
      workerId,
      instanceId: `i-${workerId}`,
      sessionId: `s-${workerId}-${validUntil.getTime()}`,
      zone: 'europe-west1-b',
      protocolVersion: 1,
      principal: 'token:gw',
      registeredAt: new Date(validUntil.getTime() - 30_000),
      validUntil,
      ackedVersion: 0,
      ackedEpoch: 0,
      ackedChecksum: '0'.repeat(64),
      lastReportSequence: null,
      lastReportDigest: null,
      outcomeSequence: 0,
    },
    report: null,
  };
}

const gatewayProxy = (i: number, until: Date): GatewayProxy => ({
  name: `px-${i}`,
  host: `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`,
  port: 3128,
  protocol: 'http',
  capacity: 4,
  expiresAt: until.toISOString(),
  usableUntil: until.toISOString(),
  attributes: {},
});

/** A stored snapshot (as an earlier pass left it) of `version` with `grantedUntil`, and `n` proxies. */
export async function storeSnapshot(
  snapshots: SnapshotStore,
  workerId: string,
  version: number,
  grantedUntil: Date,
  n = 0,
  ownershipEpoch = 1,
) {
  const checksum = String(version).padStart(64, '0');
  const header: SnapshotHeader = {
    workerId,
    version,
    ownershipEpoch,
    checksum,
    contentDigest: checksum,
    sessionId: 's-old',
    generatedAt: new Date(grantedUntil.getTime() - 180_000),
    validUntil: grantedUntil,
    grantedUntil,
    draining: {},
    recent: [{ version, epoch: ownershipEpoch, checksum }],
    sentAt: grantedUntil,
    proxies: n,
  };
  await snapshots.save(header, {
    kind: 'full',
    schemaVersion: GATEWAY_SNAPSHOT_SCHEMA_VERSION,
    version,
    ownershipEpoch,
    workerId,
    generatedAt: header.generatedAt.toISOString(),
    validUntil: grantedUntil.toISOString(),
    routing: DEFAULT_ROUTING,
    proxies: Array.from({ length: n }, (_, i) => gatewayProxy(i, grantedUntil)),
    checksum,
  });
}
