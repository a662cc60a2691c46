// Test fixture for in-memory lease stores: the grant a store makes on the first candidate of a request.
import type { Lease } from '../../../../shared/src/domain/leases/model.js';
import type { GrantOutcome, GrantRequest } from '../../../../shared/src/ports/lease-store.js';

/** The store's grant of `request` on its first candidate at `grantedAt`: no_room when there is none. */
export function grantOnFirst({ candidates, lease }: GrantRequest, grantedAt: Date): GrantOutcome {
  const [first] = candidates;
  if (!first) return { kind: 'no_room', atCapacity: 0, inGateway: 0 };
  const granted: Lease = {
    id: lease.id,
    proxy: first.name,
    proxyUid: first.uid,
    target: lease.target,
    endpoint: first.endpoint ?? null,
    exclusive: lease.exclusive,
    holder: lease.holder,
    ttlSeconds: lease.ttlSeconds,
    grantedAt,
    expiresAt: new Date(grantedAt.getTime() + lease.ttlSeconds * 1000),
    releasedAt: null,
    renewals: 0,
  };
  return { kind: 'granted', lease: granted };
}
