import { Timestamp } from '@google-cloud/firestore';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../log/json-logger.js';
import { LEASE_STATE_RETENTION_MS } from './lease-collections.js';
import { FORGET_IDLE_MS, LeaseStateCache } from './lease-state-cache.js';

const v = (s: number, n = 0) => new Timestamp(s, n);
const entry = (leaseId: string, at: number) => ({ leaseId, expiresAt: new Date(at), exclusive: false });
const now = new Date(1_000);
const uid = '00000000-0000-4000-8000-000000000000';
const p = { name: 'p', uid };
const q = { name: 'q', uid };

/** The view's clocks, moved by hand: `mono` (monotonic ms) and `wall` (ms since epoch). */
function clocks(mono = 0, wall = mono) {
  const t = { mono, wall };
  return { t, clocks: { monotonicNow: () => t.mono, wallNow: () => t.wall } };
}

describe('LeaseStateCache', () => {
  it('never goes back to an older version, whichever arrives first', () => {
    const c = new LeaseStateCache(memoryLogger(), clocks().clocks);
    c.put('p', { entries: [entry('a', 5_000), entry('b', 5_000)], version: v(10, 5) }, 100);
    c.put('p', { entries: [entry('a', 5_000)], version: v(10, 4) }, 200);
    expect(c.usage(p, now).active).toBe(2);
    expect(c.proxyOf('b')).toBe('p');
    c.put('p', { entries: [entry('a', 5_000)], version: v(10, 6) }, 300);
    expect(c.usage(p, now).active).toBe(1);
    expect(c.proxyOf('b')).toBeUndefined();
  });

  it('a re-read of the same version only makes the view younger', () => {
    const { t, clocks: k } = clocks();
    const c = new LeaseStateCache(memoryLogger(), k);
    c.put('p', { entries: [], version: v(1) }, 100);
    t.mono = 600;
    expect(c.ageMs('p')).toBe(500);
    c.put('p', { entries: [entry('x', 5_000)], version: v(1) }, 550);
    expect(c.ageMs('p')).toBe(50);
    expect(c.usage(p, now).active).toBe(0);
    expect(c.ageMs('q')).toBe(Number.POSITIVE_INFINITY);
  });

  // A wall clock stepped back an hour (NTP, a VM resumed) made every age negative: for that hour no view
  // was old enough to be read again, and proxies other replicas freed stayed full on this one.
  it('ages a view on the monotonic clock, whatever the wall clock does', () => {
    const t0 = 1_000_000;
    const { t, clocks: k } = clocks(t0, Date.parse('2026-01-01T00:00:00Z'));
    const c = new LeaseStateCache(memoryLogger(), k);
    c.put('p', { entries: [], version: v(1) }, t0);
    t.wall -= 3_600_000;
    t.mono += 1_001;
    expect(c.ageMs('p')).toBe(1_001);
  });

  it('forgets idle states that say nothing is leased; keeps leased, claimed and unreadable ones', () => {
    // The clocks far apart, as in production (performance.now counts from the process's start): an
    // entry's expiry compared with the monotonic clock would never be past, and no state that ever held
    // an entry would be forgotten.
    const m0 = 5_000;
    const w0 = Date.parse('2026-03-01T00:00:00Z');
    const { t, clocks: k } = clocks(m0, w0);
    const c = new LeaseStateCache(memoryLogger(), k);
    c.put('gone', { entries: [], version: null }, m0); // a listed name without a document
    c.put('expired', { entries: [entry('old', w0 + 1_000)], version: v(1) }, m0);
    c.put('leased', { entries: [entry('long', w0 + 2 * FORGET_IDLE_MS)], version: v(1) }, m0);
    c.put('claimed', { entries: [], version: v(1), gatewayClaim: 7 }, m0);
    c.put('garbled', { entries: null, version: v(1) }, m0);
    t.mono = m0 + FORGET_IDLE_MS;
    t.wall = w0 + FORGET_IDLE_MS;
    c.put('recent', { entries: [], version: v(1) }, t.mono);
    t.mono += 1;
    t.wall += 1;
    c.put('other', { entries: [], version: v(1) }, t.mono);
    expect(c.ageMs('gone')).toBe(Number.POSITIVE_INFINITY);
    expect(c.ageMs('expired')).toBe(Number.POSITIVE_INFINITY);
    expect(c.proxyOf('old')).toBeUndefined();
    for (const kept of ['leased', 'claimed', 'garbled', 'recent', 'other']) {
      expect(c.ageMs(kept), kept).toBeLessThan(Number.POSITIVE_INFINITY);
    }
    expect(c.size).toBe(5);
    expect(c.proxyOf('long')).toBe('leased');
    expect(c.usage({ name: 'leased', uid }, new Date(t.wall)).active).toBe(1);
  });

  it('forgets a claimed or unreadable state unseen for as long as its document outlives it', () => {
    // Deleted pool proxies: their claims are never cleared by a lease, and nothing reads their names again.
    const t0 = 1_000_000;
    const { t, clocks: k } = clocks(t0);
    const c = new LeaseStateCache(memoryLogger(), k);
    for (let i = 0; i < 1_000; i++) c.put(`gone-${i}`, { entries: [], version: v(1), gatewayClaim: 7 }, t0);
    c.put('garbled', { entries: null, version: v(1) }, t0);
    c.put('live', { entries: [], version: v(1), gatewayClaim: 7 }, t0);
    // The live pool proxy is seen again now and then (discovery re-reads the states it lists).
    c.put('live', { entries: [], version: v(1), gatewayClaim: 7 }, t0 + LEASE_STATE_RETENTION_MS - 1);
    t.mono = t.wall = t0 + LEASE_STATE_RETENTION_MS;
    c.put('other', { entries: [], version: v(1) }, t0 + LEASE_STATE_RETENTION_MS);
    expect(c.size).toBe(2);
    expect(c.get('live')?.gatewayClaim).toBe(7);
    expect(c.get('garbled')).toBeUndefined();
  });

  it('counts by the clock and treats an undecodable state as full', () => {
    const log = memoryLogger();
    const c = new LeaseStateCache(log, clocks().clocks);
    c.put('p', { entries: [entry('a', 999), entry('b', 1_001)], version: v(1) }, 0);
    expect(c.usage(p, now)).toEqual({ active: 1, exclusive: false });
    const bad = c.decode({ id: 'q', data: () => ({ entries: 'garbage' }), updateTime: v(2) });
    c.put('q', bad, 0);
    expect(c.usage(q, now).exclusive).toBe(true);
    expect(log.lines.map((l) => l.message)).toContain('malformed lease state: proxy treated as full');
  });
});
