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
  it('evicts the stalest workers once the names held pass the cap', async () => {
    // Every gateway start is a new worker id: on a long-lived API instance, 1,000 workers of a
    // 5,000-proxy pool each were 5 M names held for workers long gone.
    const names = new SnapshotNames(snapshots(2_000));
    for (let w = 0; w < 40; w++) await names.relevant(`gw-${w}`);
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
