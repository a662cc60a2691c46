// The lease service's collections (named in collections.ts, with every other one) and its TTL field.
//   leases/{leaseId}                  one lease: flat fields, Timestamps; deleted by TTL at expireAt
//   leaseState/{proxy}                the proxy's active lease entries, guarded by lastUpdateTime preconditions
//   cooldowns/{proxy}__{sha1(target)} a (proxy, target) cooldown; deleted by TTL at expireAt
//   leaseKeys/{sha256(holder, key)}   an acquire's Idempotency-Key: lease id + request digest; TTL at expireAt
import { createHash } from 'node:crypto';
import { Collections } from './collections.js';

export const LEASE_COLLECTIONS = {
  leases: Collections.leases,
  leaseState: Collections.leaseState,
  cooldowns: Collections.cooldowns,
  keys: Collections.leaseKeys,
} as const;

/**
 * The field every lease-service document carries for Firestore's TTL policy
 * (https://cloud.google.com/firestore/docs/ttl). TTL deletion can lag by a day, so nothing relies on it:
 * every read checks times against the clock. Terraform declares one policy per collection above.
 */
export const TTL_FIELD = 'expireAt';

/** How long an idle leaseState document outlives its last entry (it is recreated on the next grant). */
export const LEASE_STATE_RETENTION_MS = 7 * 24 * 3600_000;

/** Targets are hashed so that any host:port makes a valid, fixed-length document id. */
export function cooldownDocId(proxy: string, target: string): string {
  return `${proxy}__${createHash('sha1').update(target).digest('hex')}`;
}
