import { describe, expect, it } from 'vitest';
import { DEFAULT_ROUTING } from '../../../shared/src/domain/snapshots/content.js';
import {
  GATEWAY_SNAPSHOT_SCHEMA_VERSION,
  type GatewayRoute,
  type GatewaySnapshot,
} from '../../../shared/src/messages/gateway-snapshot.js';
import type { SnapshotHeader } from '../../../shared/src/ports/workers-snapshots.js';
import { lastPublishedRouting } from './last-routing.js';

const at = (s: number) => new Date(Date.UTC(2026, 11, 2, 12, 0, s));
const route = (name: string): GatewayRoute => ({
  name,
  match: { hosts: [`${name}.example`] },
  selector: {},
  policy: 'least-active',
});
const header = (
  workerId: string,
  generatedS: number,
  over: Partial<SnapshotHeader> = {},
): SnapshotHeader => ({
  workerId,
  version: 3,
  ownershipEpoch: 1,
  checksum: 'c',
  contentDigest: 'd',
  sessionId: 's',
  generatedAt: at(generatedS),
  validUntil: at(generatedS + 180),
  grantedUntil: at(generatedS + 180),
  draining: {},
  recent: [],
  sentAt: null,
  proxies: 0,
  ...over,
});
const full = (workerId: string, routing: GatewayRoute[]): GatewaySnapshot => ({
  kind: 'full',
  schemaVersion: GATEWAY_SNAPSHOT_SCHEMA_VERSION,
  version: 3,
  ownershipEpoch: 1,
  workerId,
  generatedAt: at(0).toISOString(),
  validUntil: at(180).toISOString(),
  routing,
  proxies: [],
  checksum: 'c',
});

/** loadFull over `stored` (a worker missing from it: no snapshot, or its parts swept), recording the reads. */
function store(stored: Record<string, GatewayRoute[]>) {
  const reads: string[] = [];
  return {
    reads,
    loadFull: async (workerId: string) => {
      reads.push(workerId);
      const routing = stored[workerId];
      return routing ? full(workerId, routing) : null;
    },
  };
}
const headers = (...hs: SnapshotHeader[]) => new Map(hs.map((h) => [h.workerId, h]));

describe('lastPublishedRouting', () => {
  it('takes the routing of the newest snapshot, reading only that one', async () => {
    const s = store({ old: DEFAULT_ROUTING, new: [route('shop')] });
    expect(await lastPublishedRouting(s, headers(header('old', 0), header('new', 60)))).toEqual({
      routes: [route('shop')],
      snapshot: { workerId: 'new', version: 3 },
    });
    expect(s.reads).toEqual(['new']);
  });

  it('passes over a salvaged header (its routing no longer fits either) and a swept snapshot', async () => {
    const s = store({ old: [route('news')], salvaged: [route('x')] });
    const hs = headers(
      header('old', 0),
      header('swept', 30),
      header('salvaged', 0, { generatedAt: at(60), salvaged: true }),
    );
    expect(await lastPublishedRouting(s, hs)).toMatchObject({ routes: [route('news')] });
    expect(s.reads).toEqual(['swept', 'old']);
  });

  it('is null with no snapshot to read', async () => {
    expect(await lastPublishedRouting(store({}), headers(header('swept', 0)))).toBeNull();
    expect(await lastPublishedRouting(store({}), new Map())).toBeNull();
  });
});
