import { Timestamp } from '@google-cloud/firestore';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../log/json-logger.js';
import { LeaseStateCache } from './lease-state-cache.js';

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
