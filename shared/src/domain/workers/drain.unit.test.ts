import { describe, expect, it } from 'vitest';
import { type DrainInputs, drainedAt } from './drain.js';
import { register } from './session.js';

const now = new Date('2026-01-01T00:00:00Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const session = register(
  null,
  { workerId: 'w1', instanceId: 'i1', zone: 'z', protocolVersion: 1, principal: 'token:w1' },
  now,
  's1',
  30_000,
).session;
const report = {
  workerId: 'w1',
  sessionId: 's1',
  epoch: 5,
  receivedAt: now,
  draining: false,
  counts: [{ proxy: 'busy', active: 1, reserved: 0 }],
};
const base: DrainInputs = { session, report, now: later(2), reportTtlMs: 15_000 };

describe('drainedAt (contract §4: cleared only once the counts reach zero)', () => {
  it.each<[string, string, number, Partial<DrainInputs>, boolean]>([
    ['absent from a valid report at the drain epoch', 'p1', 5, {}, true],
    ['absent from a report of a later epoch', 'p1', 4, {}, true],
    ['still active', 'busy', 5, {}, false],
    [
      'only reserved left',
      'p1',
      5,
      { report: { ...report, counts: [{ proxy: 'p1', active: 0, reserved: 2 }] } },
      false,
    ],
    [
      'listed with zero counts',
      'p1',
      5,
      { report: { ...report, counts: [{ proxy: 'p1', active: 0, reserved: 0 }] } },
      true,
    ],
    ['a report from before the drain started', 'p1', 6, {}, false],
    [
      'an older epoch, but the worker is shutting down with nothing in flight',
      'busy',
      6,
      { report: { ...report, draining: true, counts: [] } },
      true,
    ],
    [
      'an older epoch, shutting down, every count zero',
      'p1',
      6,
      { report: { ...report, draining: true, counts: [{ proxy: 'busy', active: 0, reserved: 0 }] } },
      true,
    ],
    [
      'an older epoch, shutting down, but a request still in flight elsewhere',
      'p1',
      6,
      { report: { ...report, draining: true } },
      false,
    ],
    // Shut down idle: the session's last word (it sent it and exited), not a reading that goes stale.
    [
      'shut down idle, the report past its TTL',
      'p1',
      6,
      { report: { ...report, draining: true, counts: [] }, now: later(20) },
      true,
    ],
    [
      'shut down idle, its session lapsed since',
      'p1',
      6,
      { report: { ...report, draining: true, counts: [] }, now: later(120) },
      true,
    ],
    [
      'shut down idle, but the worker has a new session',
      'p1',
      6,
      { report: { ...report, draining: true, counts: [], sessionId: 's0' } },
      false,
    ],
    [
      'shutting down with a request in flight, the report past its TTL',
      'p1',
      5,
      { report: { ...report, draining: true }, now: later(20) },
      false,
    ],
    ['no report', 'p1', 5, { report: null }, false],
    ['a report past its TTL', 'p1', 5, { now: later(16) }, false],
    ['a report of another session', 'p1', 5, { report: { ...report, sessionId: 's0' } }, false],
    ['a lapsed session', 'p1', 5, { now: later(31), reportTtlMs: 60_000 }, false],
    ['no session', 'p1', 5, { session: null }, false],
  ])('%s → %s', (_n, proxy, since, over, expected) =>
    expect(drainedAt(proxy, since, { ...base, ...over })).toBe(expected),
  );
});
