// Discovery's list (GET /v1/proxies with lease counts) answers 503 when the lease store cannot give the
// counts; that 503 is counted and logged like the lease routes' own (leases/unavailable.ts), so the
// lease-store alert sees an outage whether the crawlers are listing or leasing.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { LeaseStoreError } from '../../../../shared/src/ports/lease-store.js';
import { StoreError } from '../../../../shared/src/ports/proxy-store.js';
import { missingContractFields } from '../../../../shared/src/testing/log-contract.js';
import { aProxy } from '../../../../shared/src/testing/proxy-fixtures.js';
import { ApiError } from '../errors.js';
import { discoveryView } from './list.js';

const clock = { now: () => new Date('2026-12-01T00:00:00Z') };
const gate = { leasable: () => true };

describe('discovery list: a lease store that fails', () => {
  it('answers 503 unavailable, counts list/unavailable and logs one leases.store_unavailable line', async () => {
    const seen: Array<[string, string]> = [];
    const log = memoryLogger();
    const view = discoveryView({
      store: {
        usage: () => ({ active: 0 }) as never,
        refresh: async () => {
          throw new LeaseStoreError('unavailable', 'Firestore code 14');
        },
      },
      gate,
      clock,
      ready: async () => {},
      metrics: { leaseRequest: (op, outcome) => void seen.push([op, outcome]) },
      log,
    });
    const err = await view.list([], {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 503, code: 'unavailable' });
    expect(seen).toEqual([['list', 'unavailable']]);
    const lines = log.lines.filter((l) => l.event === 'leases.store_unavailable');
    expect(lines.map(missingContractFields)).toEqual([[]]);
    expect(lines[0]).toMatchObject({ severity: 'WARNING', op: 'list', reason: 'unavailable' });
  });

  it('a replica still loading its views is logged with reason not_ready', async () => {
    const log = memoryLogger();
    const view = discoveryView({
      store: { usage: () => ({ active: 0 }) as never, refresh: async () => 0 },
      gate,
      clock,
      ready: async () => {
        throw new LeaseStoreError('not_ready', 'views not loaded');
      },
      metrics: { leaseRequest: () => {} },
      log,
    });
    await expect(view.list([], {})).rejects.toMatchObject({ status: 503 });
    expect(log.lines.filter((l) => l.event === 'leases.store_unavailable')).toMatchObject([
      { op: 'list', reason: 'not_ready' },
    ]);
  });

  it('lease counts that load are not logged', async () => {
    const log = memoryLogger();
    const view = discoveryView({
      store: { usage: () => ({ active: 0 }) as never, refresh: async () => 0 },
      gate,
      clock,
      ready: async () => {},
      metrics: { leaseRequest: () => {} },
      log,
    });
    expect(await view.list([], {})).toEqual([]);
    expect(log.lines).toEqual([]);
  });
});

// The proxies are read before their lease counts: in a Firestore outage that first read is the one that
// fails, and it must reach the lease-store alert and carry the listing's Retry-After as the counts' does.
describe('discovery list: a proxy store that fails', () => {
  const view = (log = memoryLogger(), seen: Array<[string, string]> = []) =>
    discoveryView({
      store: { usage: () => ({ active: 0 }) as never, refresh: async () => 0 },
      gate,
      clock,
      ready: async () => {},
      metrics: { leaseRequest: (op, outcome) => void seen.push([op, outcome]) },
      log,
    });

  it('answers 503 with Retry-After 2, counts list/unavailable and logs leases.store_unavailable with its code', async () => {
    const seen: Array<[string, string]> = [];
    const log = memoryLogger();
    const cause = Object.assign(new Error('14 UNAVAILABLE'), { code: 14 });
    const err = await view(log, seen)
      .read(async () => {
        throw new StoreError('unavailable', 'Firestore unavailable', { cause });
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 503, code: 'unavailable', extra: { retryAfterSeconds: 2 } });
    expect(seen).toEqual([['list', 'unavailable']]);
    const lines = log.lines.filter((l) => l.event === 'leases.store_unavailable');
    expect(lines.map(missingContractFields)).toEqual([[]]);
    expect(lines).toMatchObject([{ severity: 'WARNING', op: 'list', reason: 'unavailable', code: 14 }]);
  });

  it('passes what it read through, and any other failure untouched', async () => {
    const seen: Array<[string, string]> = [];
    expect(await view(memoryLogger(), seen).read(async () => 'page')).toBe('page');
    const bug = new TypeError('a bug');
    await expect(
      view(memoryLogger(), seen).read(async () => {
        throw bug;
      }),
    ).rejects.toBe(bug);
    expect(seen).toEqual([]);
  });
});

describe('discovery list: a lease state the store cannot read', () => {
  const proxy = (name: string) => aProxy({ name });
  it("lists the proxy as full (its capacity) with leaseStateInvalid, not the store's internal count", async () => {
    const view = discoveryView({
      store: {
        usage: (p) =>
          p.name === 'bad'
            ? { active: Number.MAX_SAFE_INTEGER, exclusive: true, unreadable: true }
            : { active: 1, exclusive: false },
        refresh: async () => 0,
      },
      gate,
      clock,
      ready: async () => {},
      metrics: { leaseRequest: () => {} },
      log: memoryLogger(),
    });
    const [bad, good] = await view.list([proxy('bad'), proxy('good')], {});
    expect(bad).toMatchObject({ name: 'bad', activeLeases: bad!.spec.capacity, leaseStateInvalid: true });
    expect(good).toMatchObject({ name: 'good', activeLeases: 1 });
    expect(good).not.toHaveProperty('leaseStateInvalid');
  });
});
