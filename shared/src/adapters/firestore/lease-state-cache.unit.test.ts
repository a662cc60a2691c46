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

describe('LeaseStateCache', () => {
  it('never goes back to an older version, whichever arrives first', () => {
    const c = new LeaseStateCache(memoryLogger());
    c.put('p', { entries: [entry('a', 5_000), entry('b', 5_000)], version: v(10, 5) }, 100);
    c.put('p', { entries: [entry('a', 5_000)], version: v(10, 4) }, 200);
    expect(c.usage(p, now).active).toBe(2);
    expect(c.proxyOf('b')).toBe('p');
    c.put('p', { entries: [entry('a', 5_000)], version: v(10, 6) }, 300);
    expect(c.usage(p, now).active).toBe(1);
    expect(c.proxyOf('b')).toBeUndefined();
  });

  it('a re-read of the same version only makes the view younger', () => {
    const c = new LeaseStateCache(memoryLogger());
    c.put('p', { entries: [], version: v(1) }, 100);
    expect(c.ageMs('p', new Date(600))).toBe(500);
    c.put('p', { entries: [entry('x', 5_000)], version: v(1) }, 550);
    expect(c.ageMs('p', new Date(600))).toBe(50);
    expect(c.usage(p, now).active).toBe(0);
    expect(c.ageMs('q', new Date(600))).toBe(Number.POSITIVE_INFINITY);
  });

  it('forgets idle states that say nothing is leased; keeps leased, claimed and unreadable ones', () => {
    const c = new LeaseStateCache(memoryLogger());
    const t0 = 1_000_000;
    c.put('gone', { entries: [], version: null }, t0); // a listed name without a document
    c.put('expired', { entries: [entry('old', t0 + 1_000)], version: v(1) }, t0);
    c.put('leased', { entries: [entry('long', t0 + 2 * FORGET_IDLE_MS)], version: v(1) }, t0);
    c.put('claimed', { entries: [], version: v(1), gatewayClaim: 7 }, t0);
    c.put('garbled', { entries: null, version: v(1) }, t0);
    c.put('recent', { entries: [], version: v(1) }, t0 + FORGET_IDLE_MS);
    const later = t0 + FORGET_IDLE_MS + 1;
    c.put('other', { entries: [], version: v(1) }, later);
    expect(c.ageMs('gone', new Date(later))).toBe(Number.POSITIVE_INFINITY);
    expect(c.ageMs('expired', new Date(later))).toBe(Number.POSITIVE_INFINITY);
    expect(c.proxyOf('old')).toBeUndefined();
    for (const kept of ['leased', 'claimed', 'garbled', 'recent', 'other']) {
      expect(c.ageMs(kept, new Date(later)), kept).toBeLessThan(Number.POSITIVE_INFINITY);
    }
    expect(c.size).toBe(5);
    expect(c.proxyOf('long')).toBe('leased');
    expect(c.usage({ name: 'leased', uid }, new Date(later)).active).toBe(1);
  });

  it('forgets a claimed or unreadable state unseen for as long as its document outlives it', () => {
    // Deleted pool proxies: their claims are never cleared by a lease, and nothing reads their names again.
    const c = new LeaseStateCache(memoryLogger());
    const t0 = 1_000_000;
    for (let i = 0; i < 1_000; i++) c.put(`gone-${i}`, { entries: [], version: v(1), gatewayClaim: 7 }, t0);
    c.put('garbled', { entries: null, version: v(1) }, t0);
    c.put('live', { entries: [], version: v(1), gatewayClaim: 7 }, t0);
    // The live pool proxy is seen again now and then (discovery re-reads the states it lists).
    c.put('live', { entries: [], version: v(1), gatewayClaim: 7 }, t0 + LEASE_STATE_RETENTION_MS - 1);
    c.put('other', { entries: [], version: v(1) }, t0 + LEASE_STATE_RETENTION_MS);
    expect(c.size).toBe(2);
    expect(c.get('live')?.gatewayClaim).toBe(7);
    expect(c.get('garbled')).toBeUndefined();
  });

  it('counts by the clock and treats an undecodable state as full', () => {
    const log = memoryLogger();
    const c = new LeaseStateCache(log);
    c.put('p', { entries: [entry('a', 999), entry('b', 1_001)], version: v(1) }, 0);
    expect(c.usage(p, now)).toEqual({ active: 1, exclusive: false });
    const bad = c.decode({ id: 'q', data: () => ({ entries: 'garbage' }), updateTime: v(2) });
    c.put('q', bad, 0);
    expect(c.usage(q, now).exclusive).toBe(true);
    expect(log.lines.map((l) => l.message)).toContain('malformed lease state: proxy treated as full');
  });
});
