import { describe, expect, it } from 'vitest';
import type { SnapshotHeader } from '../../../../shared/src/ports/workers-snapshots.js';
import { record } from '../../../../test/support/worker-records.js';
import { workerView } from './admin-views.js';

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
