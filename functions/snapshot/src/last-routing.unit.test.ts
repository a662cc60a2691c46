import { describe, expect, it } from 'vitest';
import { DEFAULT_ROUTING } from '../../../shared/src/domain/snapshots/content.js';
import type { GatewayRoute } from '../../../shared/src/messages/gateway-snapshot.js';
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
const headers = (...hs: SnapshotHeader[]) => new Map(hs.map((h) => [h.workerId, h]));

describe('lastPublishedRouting', () => {
  it('takes the routing of the newest snapshot', () => {
    const hs = headers(
      header('old', 0, { routing: DEFAULT_ROUTING }),
      header('new', 60, { routing: [route('shop')], version: 7 }),
    );
    expect(lastPublishedRouting(hs)).toEqual({
      routes: [route('shop')],
      snapshot: { workerId: 'new', version: 7 },
    });
  });

  it('passes over a salvaged header (its routing no longer fits either) and one without a routing', () => {
    const hs = headers(
      header('old', 0, { routing: [route('news')] }),
      header('bare', 30),
      header('salvaged', 60, { salvaged: true, routing: [route('x')] }),
    );
    expect(lastPublishedRouting(hs)).toMatchObject({ routes: [route('news')] });
  });

  it('is null with no header that carries one', () => {
    expect(lastPublishedRouting(headers(header('bare', 0)))).toBeNull();
    expect(lastPublishedRouting(new Map())).toBeNull();
  });
});
