import { describe, expect, it } from 'vitest';
import { MAX_SNAPSHOT_PROXIES } from '../../messages/gateway-snapshot.js';
import { type CapProxy, capShares } from './share-cap.js';

const px = (name: string, over: Partial<CapProxy> = {}): CapProxy => ({
  name,
  eligible: ['w1', 'w2'],
  current: null,
  draining: false,
  serving: true,
  ...over,
});
const run = (given: Record<string, string | null>, proxies: CapProxy[], cap: number) =>
  capShares(new Map(Object.entries(given)), proxies, cap);

describe('capShares', () => {
  it('by default caps at the wire schema`s MAX_SNAPSHOT_PROXIES and leaves a share within it as it is', () => {
    const desired = new Map([['a', 'w1']]);
    const r = capShares(desired, [px('a')]);
    expect(r.cap).toEqual({ cap: MAX_SNAPSHOT_PROXIES, capped: [], moved: 0, unassigned: 0 });
    expect(r.desired).toEqual(desired);
  });

  it('a full worker keeps what it owns and is not draining, then what it drains, serving ones first', () => {
    const proxies = [
      px('a'),
      px('b', { current: 'w1', draining: true }),
      px('c', { current: 'w1', serving: false }),
      px('d', { current: 'w1' }),
      px('e', { current: 'w1', draining: true, serving: false }),
    ].map((p) => ({ ...p, eligible: ['w1'] }));
    const given = { a: 'w1', b: 'w1', c: 'w1', d: 'w1', e: 'w1' };
    expect([...run(given, proxies, 2).desired]).toEqual([
      ['a', null],
      ['b', null],
      ['c', 'w1'],
      ['d', 'w1'],
      ['e', null],
    ]);
    expect([...run(given, proxies, 3).desired].filter(([, w]) => w).map(([n]) => n)).toEqual(['b', 'c', 'd']);
    expect(run(given, proxies, 2).cap).toEqual({
      cap: 2,
      capped: [{ workerId: 'w1', share: 5 }],
      moved: 0,
      unassigned: 3,
    });
  });

  it('the excess goes back to its current owner when it has room, else to an eligible worker with room', () => {
    const proxies = [
      px('a', { current: 'w1' }),
      px('b', { current: 'w2' }), // the balance moved it to w1: the cap leaves it where it is
      px('c'), // unowned: to whichever worker with room
      px('d', { eligible: ['w1', 'w3'] }),
    ];
    const r = run({ a: 'w1', b: 'w1', c: 'w1', d: 'w1' }, proxies, 1);
    expect(r.desired.get('a')).toBe('w1');
    expect(r.desired.get('b')).toBe('w2');
    expect(r.desired.get('d')).toBe('w3');
    // w2 took b: it has no room left at a cap of 1, and w1 is full.
    expect(r.desired.get('c')).toBeNull();
    expect(r.cap).toMatchObject({ moved: 2, unassigned: 1 });
  });
});
