import { describe, expect, it } from 'vitest';
import type { GatewaySnapshot } from '../../../../shared/src/messages/gateway-snapshot.js';
import type { SnapshotHeader } from '../../../../shared/src/ports/workers-snapshots.js';
import { SnapshotNames } from './snapshot-names.js';

/** Snapshots of `perWorker` proxies for any worker id: only what relevant() reads of them. */
function snapshots(perWorker: number) {
  const header = (workerId: string) => ({ workerId, version: 1, draining: {} }) as unknown as SnapshotHeader;
  return {
    header: async (workerId: string) => header(workerId),
    loadFull: async (workerId: string) =>
      ({
        version: 1,
        proxies: Array.from({ length: perWorker }, (_, i) => ({ name: `${workerId}-p${i}` })),
      }) as unknown as GatewaySnapshot,
  };
}

describe('SnapshotNames holds a bounded number of names, not only of workers', () => {
  it('evicts the stalest idle workers once the names held pass the cap', async () => {
    // Every gateway start is a new worker id: on a long-lived API instance, 1,000 workers of a
    // 5,000-proxy pool each were 5 M names held for workers long gone.
    let now = 0;
    const names = new SnapshotNames(snapshots(2_000), { now: () => now });
    for (let w = 0; w < 40; w++) {
      await names.relevant(`gw-${w}`);
      now += 60_000; // each gone a minute later (a restart: a new worker id)
    }
    expect(names.heldNames).toBeLessThanOrEqual(50_000);
    // The newest are still there (their names come back without a new read).
    expect((await names.relevant('gw-39')).has('gw-39-p0')).toBe(true);
  });

  it('keeps one worker whose snapshot alone is over the cap (its reports need it)', async () => {
    const names = new SnapshotNames(snapshots(60_000));
    expect((await names.relevant('gw-big')).size).toBe(60_000);
    expect(names.heldNames).toBe(60_000);
  });
});

describe('SnapshotNames keeps the live workers, whatever their names add up to', () => {
  it('reads each live worker once per version when their snapshots together pass the name cap', async () => {
    // A snapshot holds up to 20,000 proxies, and each pool proxy is owned once: three live workers of a
    // 60,000-proxy pool are 60,000 names. Evicting by names alone, reports arriving A, B, C, A, B, C each
    // found their worker just evicted: a full snapshot read (10 parts) per outcome call, for good.
    const store = snapshots(20_000);
    let loads = 0;
    const counted = {
      header: store.header,
      loadFull: async (workerId: string) => {
        loads++;
        return store.loadFull(workerId);
      },
    };
    let now = 0;
    const names = new SnapshotNames(counted, { now: () => now });
    for (let round = 0; round < 3; round++) {
      for (const w of ['gw-a', 'gw-b', 'gw-c']) {
        expect((await names.relevant(w)).has(`${w}-p0`)).toBe(true);
        now += 5_000; // one outcome call per worker every few seconds
      }
    }
    expect(loads).toBe(3);
  });

  it('lets the workers idle for long go once the names held pass the cap', async () => {
    let now = 0;
    const names = new SnapshotNames(snapshots(20_000), { now: () => now });
    for (const w of ['gw-a', 'gw-b', 'gw-c']) await names.relevant(w);
    expect(names.heldNames).toBe(60_000); // all used within the idle window: kept
    now += 11 * 60_000; // gw-a … gw-c gone (a gateway restart: new worker ids)
    await names.relevant('gw-d');
    expect(names.heldNames).toBeLessThanOrEqual(50_000);
    expect((await names.relevant('gw-d')).has('gw-d-p0')).toBe(true);
  });
});
