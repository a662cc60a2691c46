import { describe, expect, it } from 'vitest';
import type { SnapshotHeader } from '../../../../shared/src/ports/workers-snapshots.js';
import { aProxy, externalSpec } from '../../../../shared/src/testing/proxy-fixtures.js';
import { record } from '../../../../test/support/worker-records.js';
import { ownershipView, workerView } from './admin-views.js';

const NOW = new Date('2026-12-03T12:00:00Z');
const header = (over: Partial<SnapshotHeader> = {}): SnapshotHeader => ({
  workerId: 'gw-1',
  version: 7,
  ownershipEpoch: 3,
  checksum: 'c',
  contentDigest: 'd',
  sessionId: 's',
  generatedAt: NOW,
  validUntil: NOW,
  grantedUntil: new Date(NOW.getTime() + 180_000),
  draining: { 'px-1': 3 },
  recent: [],
  sentAt: NOW,
  proxies: 12,
  ...over,
});

describe('workerView', () => {
  it('shows the snapshot a whole header describes', () => {
    expect(workerView(record('gw-1', NOW), header(), 12, NOW).snapshot).toEqual({
      version: 7,
      ownershipEpoch: 3,
      proxies: 12,
      grantedUntil: '2026-12-03T12:03:00.000Z',
      drainingAway: 1,
    });
  });

  it('shows no snapshot for a header read only for its version and grant: its other fields are no facts', () => {
    const salvaged = header({ ownershipEpoch: 0, proxies: 0, draining: {}, salvaged: true });
    expect(workerView(record('gw-1', NOW), salvaged, 12, NOW).snapshot).toBeNull();
  });
});

describe('ownershipView', () => {
  it("shows a record kept for a deleted proxy as that one's, not the new proxy's of its name", () => {
    const p = aProxy({ name: 'p1', spec: externalSpec({ gatewayPool: true, capacity: 4 }) });
    const view = (uid: string | null) =>
      ownershipView({
        epoch: 7,
        records: new Map([['p1', { proxy: 'p1', owner: 'gw-1', since: 3, drainEpoch: 6, uid }]]),
        pool: [p],
        workers: new Map(),
        headers: new Map(),
        reportTtlMs: 15_000,
        now: NOW,
      })[0]!;
    // Before: the new proxy's row, in the pool with its capacity, owned by the deleted one's worker.
    expect(view('00000000-0000-4000-8000-0000000000aa')).toMatchObject({
      proxy: 'p1',
      inPool: false,
      owner: 'gw-1',
      capacity: 0,
    });
    expect(view(p.uid)).toMatchObject({ inPool: true, capacity: 4 });
    expect(view(null)).toMatchObject({ inPool: true, capacity: 4 });
  });
});
