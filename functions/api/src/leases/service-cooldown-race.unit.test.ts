// A report of a site's push-back (another crawler's lease on the proxy, a 429 for that site) may commit
// while a grant on the same proxy waits its turn: selection asked about cooldowns before the grant, and
// the grant itself does not. The answer is checked again as it leaves (LeaseService.handedOut): a new
// grant on a proxy now cooling down for its target is given back and selection runs again — another
// proxy, or 409 no_match with the cooldown's end. In-memory views (the real store's report path puts a
// cooldown into the replica's view as soon as it commits, lease-cooldown-write.ts).
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
import type { OwnershipGate } from '../../../../shared/src/ports/workers-ownership.js';
import { grantOnFirst } from './grant-on-first.unit.js';
import { LeaseService } from './service.js';

const SITE = 'shop.example:443';
const COOLDOWN_MS = 300_000;

/**
 * `proxies`, ranked in order (latency); the store grants on the first candidate. While the first grant on
 * `coolsDuringGrant` is made, a cooldown of it for SITE starts (the report commits meanwhile).
 */
function serviceWith(proxies: ProxyResource[], coolsDuringGrant: string) {
  const clock = new ManualClock(T0);
  const cooling = new Map<string, Date>(); // proxy name → end, for SITE
  const released: string[] = [];
  const granted: string[] = [];
  const catalog: ProxyCatalog = {
    ready: async () => {},
    list: () => proxies,
    get: (name) => proxies.find((p) => p.name === name),
  };
  const store = {
    ready: async () => {},
    usage: () => ({ active: 0, exclusive: false }),
    pending: () => 0,
    cooldownEnd: (p: { name: string }, target: string | null, now: Date) => {
      const end = target === SITE ? cooling.get(p.name) : undefined;
      return end && end > now ? end : null;
    },
    refresh: async () => 0,
    release: async (id: string) => {
      released.push(id);
      return true;
    },
    grant: async (request: GrantRequest): Promise<GrantOutcome> => {
      const first = request.candidates[0];
      if (first?.name === coolsDuringGrant && !cooling.has(first.name))
        cooling.set(first.name, new Date(clock.now().getTime() + COOLDOWN_MS));
      const outcome = grantOnFirst(request, clock.now());
      if (outcome.kind === 'granted') granted.push(`${outcome.lease.id}@${outcome.lease.proxy}`);
      return outcome;
    },
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
    secrets: { access: async () => 'user:pass' },
    gate,
    clock,
    monotonicNow: () => 0,
    settings: { cooldownWindowMs: 60_000 },
    log: memoryLogger(),
  });
  return { service, released, granted };
}

const request = (target: string | undefined) => ({
  selector: {},
  exclusive: false,
  ttlSeconds: 300,
  protocols: ['http' as const],
  ...(target === undefined ? {} : { target }),
});

describe('LeaseService: a cooldown that starts while the grant is made', () => {
  it('gives the grant back and leases another proxy', async () => {
    const x = serviceWith([proxy('p1', { latencyMillis: 1 }), proxy('p2', { latencyMillis: 5 })], 'p1');
    const outcome = await x.service.acquire(request(SITE), 'crawler-b');
    expect(outcome).toMatchObject({ kind: 'granted', grant: { proxy: { name: 'p2' }, target: SITE } });
    const [first] = x.granted;
    expect(first).toMatch(/@p1$/);
    expect(x.released).toEqual([first!.split('@')[0]]);
  });

  it('with no other proxy: 409 no_match, counted in cooldown, with its end and Retry-After', async () => {
    const x = serviceWith([proxy('p1', { latencyMillis: 1 })], 'p1');
    const outcome = await x.service.acquire(request(SITE), 'crawler-b');
    expect(outcome).toMatchObject({
      kind: 'no_match',
      retryAfterSeconds: COOLDOWN_MS / 1000,
      body: { inCooldown: 1, cooldownEndsAt: new Date(T0.getTime() + COOLDOWN_MS).toISOString() },
    });
    expect(x.released).toHaveLength(1);
  });

  it('a cooldown for another site changes nothing: the grant stands', async () => {
    const x = serviceWith([proxy('p1', { latencyMillis: 1 })], 'p1');
    const outcome = await x.service.acquire(request('other.example:443'), 'crawler-b');
    expect(outcome).toMatchObject({ kind: 'granted', grant: { proxy: { name: 'p1' } } });
    expect(x.released).toEqual([]);
  });
});
