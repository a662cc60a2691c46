// The sliced decode (message.ts) against the wire schema in one piece: the same verdict and the same
// data for every message, whichever part of it is wrong — and it does yield on a large snapshot.
import { describe, expect, it } from 'vitest';
import { buildDelta } from '../../../../shared/src/domain/gateway/delta.js';
import type { Sliced } from '../../../../shared/src/domain/gateway/slices.js';
import { GatewaySnapshotMessage, sha256Hex } from '../../../../shared/src/messages/gateway-snapshot.js';
import { feedMessage, proxy, snapshot, WORKER } from './fakes.js';
import { decodeSnapshotMessage, decodeSnapshotSlices } from './message.js';

const names = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => `p-${String(from + i).padStart(5, '0')}`);
const big = snapshot(1, names(1_200));
const delta = buildDelta(big, snapshot(2, [...names(1_100), ...names(700, 5_000)]), sha256Hex);

/** Each case: a message body (as the JSON value sent) and what is wrong with it, if anything. */
const cases: Array<[string, unknown, 'snapshot' | 'poison']> = [
  ['a valid full snapshot of 1,200 proxies', big, 'snapshot'],
  ['a valid delta upserting 700 and removing 100', delta, 'snapshot'],
  [
    'an entry deep in the list with port 0',
    { ...big, proxies: big.proxies.map((p, i) => (i === 700 ? { ...p, port: 0 } : p)) },
    'poison',
  ],
  [
    'an entry with a field the schema does not know',
    { ...big, proxies: [...big.proxies.slice(0, 900), { ...proxy('p-x'), colour: 'red' }] },
    'poison',
  ],
  ['an entry that is not an object', { ...big, proxies: [...big.proxies.slice(0, 3), 'p-x'] }, 'poison'],
  ['two entries of one name', { ...big, proxies: [...big.proxies, big.proxies[600]] }, 'poison'],
  ['two upserts of one name', { ...delta, upserts: [...delta.upserts, delta.upserts[3]] }, 'poison'],
  [
    'a proxy both upserted and removed',
    { ...delta, removals: [...delta.removals, delta.upserts[500]!.name] },
    'poison',
  ],
  ['a delta whose version is not above its base', { ...delta, version: 1, baseVersion: 1 }, 'poison'],
  [
    'more entries than a snapshot may carry',
    { ...big, proxies: Array.from({ length: 20_001 }, (_, i) => proxy(`p-${i}`)) },
    'poison',
  ],
  ['proxies that are not a list', { ...big, proxies: { 'p-a': proxy('p-a') } }, 'poison'],
  ['an unknown kind', { ...big, kind: 'partial' }, 'poison'],
  ['a field the envelope does not know', { ...big, comment: 'hello' }, 'poison'],
  ['a bad checksum format', { ...big, checksum: 'not-hex' }, 'poison'],
  [
    'upper-case hosts a route lists (the schema lower-cases them)',
    { ...big, routing: [{ ...big.routing[0]!, match: { hosts: ['Example.COM'] } }] },
    'snapshot',
  ],
  ['a bare list', [big], 'poison'],
  ['null', null, 'poison'],
];

describe('decodeSnapshotMessage (sliced) against GatewaySnapshotMessage in one piece', () => {
  it.each(cases)('%s', (_label, body, verdict) => {
    const whole = GatewaySnapshotMessage.safeParse(body);
    const decoded = decodeSnapshotMessage(feedMessage(JSON.stringify(body)), WORKER);
    expect(decoded.kind).toBe(verdict);
    if (whole.success) {
      expect(decoded).toEqual({ kind: 'snapshot', message: whole.data });
    } else {
      expect(decoded.kind).toBe('poison');
    }
  });

  it('names the entry at fault, by its place in the list', () => {
    const body = { ...big, proxies: big.proxies.map((p, i) => (i === 700 ? { ...p, port: 0 } : p)) };
    expect(decodeSnapshotMessage(feedMessage(JSON.stringify(body)), WORKER)).toMatchObject({
      kind: 'poison',
      reason: expect.stringMatching(/^schema: proxies\.700\.port /),
    });
  });
});

describe('slices', () => {
  const yields = (work: Sliced<unknown>) => {
    let n = 0;
    while (!work.next().done) n++;
    return n;
  };

  it('a snapshot of 1,200 proxies yields between slices of its entries; a small one never', () => {
    expect(yields(decodeSnapshotSlices(feedMessage(big), WORKER))).toBe(2);
    expect(yields(decodeSnapshotSlices(feedMessage(snapshot(1, names(10))), WORKER))).toBe(0);
  });

  it('a message for another worker is left unparsed, without a slice', () => {
    expect(yields(decodeSnapshotSlices(feedMessage(big, { workerId: 'gw-2' }), WORKER))).toBe(0);
  });
});
