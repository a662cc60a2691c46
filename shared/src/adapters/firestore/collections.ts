// Every Firestore collection name, in one place (Terraform's indexes and TTL policies name them too).
export const Collections = {
  proxies: 'proxies',
  health: 'health',
  leases: 'leases',
  leaseState: 'leaseState',
  cooldowns: 'cooldowns',
  /** leaseKeys/{sha256(holder, key)}: an acquire's Idempotency-Key record (docs/leases.md). */
  leaseKeys: 'leaseKeys',
  workers: 'workers',
  snapshots: 'snapshots',
  /** Gateway control plane (docs/gateway-control-plane.md): ownership state + shards, outcome batches, config. */
  ownership: 'ownership',
  workerOutcomes: 'workerOutcomes',
  gatewayConfig: 'gatewayConfig',
  reclaims: 'reclaims',
  jobRuns: 'jobRuns',
  /** cursors/probe-passive: how far the probe has consumed workerOutcomes (ports/passive-feed.ts). */
  cursors: 'cursors',
  /** replacements/slots: the replacement slots that pace stale-hash replacements (ports/replacement-slots.ts). */
  replacements: 'replacements',
} as const;
