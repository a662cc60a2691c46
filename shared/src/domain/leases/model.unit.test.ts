import { describe, expect, it } from 'vitest';
import { at } from './fixtures.unit.js';
import { isActive, leaseEnd, renewedExpiry, resolvableUntil } from './model.js';

const settings = { cooldownWindowMs: 60_000 };

describe('lease life', () => {
  it.each([
    { name: 'live', expiresAt: 200, releasedAt: null, now: 100, active: true, end: 200, resolvable: 260 },
    { name: 'expired', expiresAt: 100, releasedAt: null, now: 100, active: false, end: 100, resolvable: 160 },
    {
      name: 'released early',
      expiresAt: 200,
      releasedAt: 50,
      now: 100,
      active: false,
      end: 50,
      resolvable: 110,
    },
    {
      name: 'released after expiry',
      expiresAt: 40,
      releasedAt: 50,
      now: 100,
      active: false,
      end: 40,
      resolvable: 100,
    },
  ])('$name', ({ expiresAt, releasedAt, now, active, end, resolvable }) => {
    const lease = { expiresAt: at(expiresAt), releasedAt: releasedAt === null ? null : at(releasedAt) };
    expect(isActive(lease, at(now))).toBe(active);
    expect(leaseEnd(lease)).toEqual(at(end));
    expect(resolvableUntil(lease, settings)).toEqual(at(resolvable));
  });

  it.each([
    { expiresAt: 150, ttl: 300, now: 100, renewed: 400 },
    { expiresAt: 900, ttl: 300, now: 100, renewed: 900 },
  ])(
    'renewal of a lease expiring at +$expiresAt by $ttl s at +$now → +$renewed',
    ({ expiresAt, ttl, now, renewed }) => {
      expect(renewedExpiry({ expiresAt: at(expiresAt) }, ttl, at(now))).toEqual(at(renewed));
    },
  );
});
