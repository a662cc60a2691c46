import { describe, expect, it } from 'vitest';
import { proxy } from '../leases/fixtures.unit.js';
import { gatewayClaimSettled, leasableBesideGateway } from './leasable.js';

const inPool = (gatewayPool: boolean) => {
  const p = proxy('p');
  return { ...p, spec: { ...p.spec, gatewayPool } };
};

// Contract §4 step 4: only a proxy without an owner may be extracted; a pool proxy only once reclaimed.
describe('leasableBesideGateway', () => {
  it.each<{ pool: boolean; owned: boolean; reclaimed: boolean; leasable: boolean }>([
    { pool: false, owned: false, reclaimed: false, leasable: true },
    { pool: false, owned: false, reclaimed: true, leasable: true },
    // Taken out of the pool but the drain has not finished: the worker still owns it.
    { pool: false, owned: true, reclaimed: false, leasable: false },
    // In the pool and not reclaimed: the gateway's, owned yet or not.
    { pool: true, owned: false, reclaimed: false, leasable: false },
    { pool: true, owned: true, reclaimed: false, leasable: false },
    // Reclaimed: leasable only once the drain finished and the ownership was cleared.
    { pool: true, owned: true, reclaimed: true, leasable: false },
    { pool: true, owned: false, reclaimed: true, leasable: true },
  ])('pool=$pool owned=$owned reclaimed=$reclaimed → $leasable', ({ pool, owned, reclaimed, leasable }) => {
    expect(leasableBesideGateway(inPool(pool), owned, reclaimed)).toBe(leasable);
  });

  it.each<{ pool: boolean; owned: boolean; reclaimed: boolean; leasable: boolean }>([
    // Views trailing (a listener re-subscribing): a pool proxy fails closed even when reclaimed …
    { pool: true, owned: false, reclaimed: true, leasable: false },
    // … a proxy outside the pool keeps its last known answer: the planner cannot assign it meanwhile.
    { pool: false, owned: false, reclaimed: false, leasable: true },
    { pool: false, owned: true, reclaimed: false, leasable: false },
  ])('views trailing: pool=$pool owned=$owned reclaimed=$reclaimed → $leasable', (row) => {
    expect(leasableBesideGateway(inPool(row.pool), row.owned, row.reclaimed, false)).toBe(row.leasable);
  });
});

// The planner's claim on leaseState/{proxy} holds a grant until the lease service's view has caught up.
describe('gatewayClaimSettled', () => {
  it.each<{ epoch: number | null; owned: boolean; settled: boolean }>([
    // The view has not seen the assignment yet (the race this closes): held.
    { epoch: 6, owned: false, settled: false },
    { epoch: null, owned: false, settled: false },
    // It has, and the proxy is owned: held (the gate says so too).
    { epoch: 7, owned: true, settled: false },
    // Seen and released since: the claim is history, the ordinary gate decides — even from a view that
    // stopped following since (a later assignment would have written a newer claim).
    { epoch: 7, owned: false, settled: true },
    { epoch: 12, owned: false, settled: true },
  ])('claim 7, view epoch=$epoch owned=$owned → $settled', ({ settled, ...view }) => {
    expect(gatewayClaimSettled(7, view)).toBe(settled);
  });
});
