import { describe, expect, it } from 'vitest';
import { nextGrant, usableUntil } from './grants.js';

const now = new Date('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(now.getTime() + s * 1000);
const s = { grantMs: 180_000, renewBeforeMs: 150_000 };

describe('nextGrant', () => {
  it.each<[string, Date | null, boolean, Date | null]>([
    ['a live worker with no grant gets one', null, true, at(180)],
    ['a grant with plenty left is kept (no new snapshot)', at(170), true, at(170)],
    ['a grant inside the renewal window is renewed', at(149), true, at(180)],
    ['a lapsed grant of a live worker is renewed', at(-10), true, at(180)],
    ['a worker that is not live keeps what it had (it lapses)', at(20), false, at(20)],
    ['a worker that is not live and never had one gets none', null, false, null],
  ])('%s', (_n, current, live, expected) => expect(nextGrant(current, live, now, s)).toEqual(expected));
});

describe('usableUntil = expiresAt − allocationSafetyMargin (contract §3)', () => {
  it.each<[string, Date, number, Date]>([
    ['the margin before expiry', at(180), 10_000, at(170)],
    // Not clamped to now: a grant with less than the margin left allocates nothing, on any clock.
    ['already past when less than the margin is left', at(4), 10_000, at(-6)],
    ['a zero margin is the expiry', at(60), 0, at(60)],
    ['never after expiresAt', at(60), -5_000, at(60)],
  ])('%s', (_n, expiresAt, margin, expected) => expect(usableUntil(expiresAt, margin)).toEqual(expected));
});
