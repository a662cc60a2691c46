// The credentials quarantine (LeaseService.setAside) is timed on the monotonic clock: a wall clock stepped
// back an hour (NTP, a VM resumed) kept a proxy whose credentials failed once out for an hour and 30 s,
// every acquire on it 409 no_match meanwhile. In-memory views; test/integration/leases-api.test.ts covers
// the quarantine against Firestore.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { proxy, T0 } from '../../../../shared/src/domain/leases/fixtures.unit.js';
import type { ProxyResource } from '../../../../shared/src/domain/proxy.js';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import type {
  GrantOutcome,
  GrantRequest,
  LeaseStore,
  ProxyCatalog,
} from '../../../../shared/src/ports/lease-store.js';
import type { SecretReader } from '../../../../shared/src/ports/secrets.js';
import type { OwnershipGate } from '../../../../shared/src/ports/workers-ownership.js';
import { grantOnFirst } from './grant-on-first.unit.js';
import { LeaseService } from './service.js';

/** One proxy naming a secret; the store grants on the first candidate, nothing else held. */
function serviceWith(secrets: SecretReader) {
  const p = proxy('solo', { latencyMillis: 1 });
  const solo: ProxyResource = {
    ...p,
    spec: { ...p.spec, credentialsRef: { secret: 'creds', version: 'latest' } },
  };
  const clock = new ManualClock(T0);
  let monotonic = 1_000;
  const catalog: ProxyCatalog = {
    ready: async () => {},
    list: () => [solo],
    get: (name) => (name === solo.name ? solo : undefined),
  };
  const store = {
    ready: async () => {},
    usage: () => ({ active: 0, exclusive: false }),
    pending: () => 0,
    cooldownEnd: () => null,
    refresh: async () => 0,
    release: async () => true,
    grant: async (request: GrantRequest): Promise<GrantOutcome> => grantOnFirst(request, clock.now()),
  } as unknown as LeaseStore;
  const gate = {
    ready: async () => {},
    leasable: () => true,
    claimSettled: () => true,
    following: () => true,
  } as unknown as OwnershipGate;
  const service = new LeaseService({
    catalog,
    store,
    secrets,
    gate,
    clock,
    monotonicNow: () => monotonic,
    settings: { cooldownWindowMs: 60_000 },
    log: memoryLogger(),
  });
  return { service, clock, advanceMonotonic: (ms: number) => (monotonic += ms) };
}

const request = { selector: {}, exclusive: false, ttlSeconds: 300, protocols: ['http' as const] };

describe('LeaseService credentials quarantine', () => {
  it('ends 30 s of monotonic time after it began, whatever the wall clock did meanwhile', async () => {
    let readable = false;
    const { service, clock, advanceMonotonic } = serviceWith({
      access: async () => {
        if (!readable) throw new Error('Secret Manager unavailable');
        return 'user:pass';
      },
    });
    // The read fails: the grant is given back and the proxy set aside.
    expect(await service.acquire(request, 'crawler')).toMatchObject({
      kind: 'no_match',
      body: { unhealthy: 1 },
    });
    expect(service.setAsideCount).toBe(1);
    readable = true;
    clock.advance(-3_600_000); // NTP steps the wall clock back an hour
    advanceMonotonic(10_000);
    expect(await service.acquire(request, 'crawler')).toMatchObject({ kind: 'no_match' });
    advanceMonotonic(21_000); // 31 s since it was set aside
    expect(await service.acquire(request, 'crawler')).toMatchObject({
      kind: 'granted',
      grant: { proxy: { name: 'solo' } },
    });
  });
});
