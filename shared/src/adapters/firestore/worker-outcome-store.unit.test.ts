import { FieldValue, Timestamp } from '@google-cloud/firestore';
import { describe, expect, it } from 'vitest';
import { emptyTally } from '../../domain/workers/outcomes.js';
import { ceilToMillis, outcomeBatchFromFirestore, outcomeBatchToFirestore } from './worker-outcome-store.js';

const apiClock = new Date('2026-01-01T00:00:00Z');

describe('outcome batch documents', () => {
  it('are stamped with the commit time, not the API clock (which only sets the TTL)', () => {
    const d = outcomeBatchToFirestore({
      workerId: 'gw',
      sessionId: 's',
      sequence: 1,
      receivedAt: apiClock,
      tallies: new Map([['p', emptyTally()]]),
    });
    expect(d.receivedAt).toEqual(FieldValue.serverTimestamp());
    expect((d.expireAt as Timestamp).toMillis()).toBe(apiClock.getTime() + 3600_000);
  });

  it.each<[string, number, number, string]>([
    ['whole milliseconds stay', 1_767_225_600, 123_000_000, '2026-01-01T00:00:00.123Z'],
    ['microseconds round up', 1_767_225_600, 123_000_001, '2026-01-01T00:00:00.124Z'],
    ['… across the second', 1_767_225_600, 999_500_000, '2026-01-01T00:00:01.000Z'],
  ])('a commit time reads as a Date rounded up: %s', (_n, seconds, nanos, iso) => {
    const t = new Timestamp(seconds, nanos);
    expect(ceilToMillis(t).toISOString()).toBe(iso);
    const read = outcomeBatchFromFirestore({
      workerId: 'gw',
      sessionId: 's',
      sequence: 1,
      receivedAt: t,
      proxies: {},
    });
    expect(read?.receivedAt.toISOString()).toBe(iso);
  });
});
