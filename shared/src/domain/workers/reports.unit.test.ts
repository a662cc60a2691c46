import { describe, expect, it } from 'vitest';
import { acceptAck, isFirstAck } from './ack.js';
import { acceptRuntimeReport, type RuntimeReport } from './runtime-report.js';
import { register, type WorkerSession } from './session.js';
import { type CapacityInputs, countsFor, usableCapacity } from './usable-capacity.js';

const now = new Date('2026-01-01T00:00:00Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const base = register(
  null,
  { workerId: 'w1', instanceId: 'i1', zone: 'z', protocolVersion: 1, principal: 'token:w1' },
  now,
  's1',
  30_000,
).session;
const acked: WorkerSession = { ...base, ackedVersion: 7, ackedEpoch: 3, ackedChecksum: 'c7' };
const report = (over: Partial<RuntimeReport> = {}): RuntimeReport => ({
  sessionId: 's1',
  reportSequence: 1,
  snapshotVersion: 7,
  epoch: 3,
  draining: false,
  counts: [{ proxy: 'p1', active: 1, reserved: 0 }],
  ...over,
});

describe('acceptAck', () => {
  const sent = [
    { version: 6, epoch: 3, checksum: 'c6' },
    { version: 7, epoch: 3, checksum: 'c7' },
  ];
  it.each<[string, { version: number; epoch: number; checksum: string }, number, string | null]>([
    ['the latest snapshot', { version: 7, epoch: 3, checksum: 'c7' }, 3, null],
    ['an in-flight older snapshot of the same epoch', { version: 6, epoch: 3, checksum: 'c6' }, 3, null],
    ['a version never sent', { version: 8, epoch: 3, checksum: 'c8' }, 3, 'unknown_snapshot'],
    ['a wrong checksum', { version: 7, epoch: 3, checksum: 'zz' }, 3, 'checksum_mismatch'],
    ['an epoch below the current one', { version: 7, epoch: 3, checksum: 'c7' }, 4, 'stale_epoch'],
  ])('%s', (_n, ack, epoch, error) => {
    const r = acceptAck(base, ack, sent, epoch);
    expect(r.ok ? null : r.error).toBe(error);
  });
  it('never moves the bound backwards', () => {
    const r = acceptAck(acked, { version: 6, epoch: 3, checksum: 'c6' }, sent, 3);
    expect(r).toEqual({ ok: false, error: 'version_regression' });
  });
  it('an ACK accepted before: its first answer lost, the first request’s answer is replayed (unchanged)', () => {
    const r = acceptAck(acked, { version: 7, epoch: 3, checksum: 'c7' }, sent, 3);
    expect(r).toEqual({ ok: true, unchanged: true, session: acked });
  });
  // The worker retries an ACK whose answer it lost; a drain raised the epoch meanwhile, or later snapshots
  // pushed this one off the recent list. Refused, the worker could name no bound it knew accepted: every
  // runtime report, its last at shutdown too, was refused ack_bound_mismatch.
  it.each<[string, number, typeof sent]>([
    ['after the epoch rose', 4, sent],
    ['after the snapshot left the recent list', 3, [{ version: 9, epoch: 3, checksum: 'c9' }]],
  ])('a replay of the session’s own bound %s: accepted, unchanged, nothing recorded', (_n, epoch, recent) => {
    const r = acceptAck(acked, { version: 7, epoch: 3, checksum: 'c7' }, recent, epoch);
    expect(r).toEqual({ ok: true, unchanged: true, session: acked });
  });
  it('an ACK of the same version with another epoch or checksum is no replay: checked as any other', () => {
    expect(acceptAck(acked, { version: 7, epoch: 2, checksum: 'c7' }, sent, 4)).toEqual({
      ok: false,
      error: 'checksum_mismatch',
    });
    expect(acceptAck(acked, { version: 7, epoch: 3, checksum: 'zz' }, sent, 4)).toEqual({
      ok: false,
      error: 'checksum_mismatch',
    });
  });
  it('a new bound is not unchanged', () => {
    const r = acceptAck(base, { version: 7, epoch: 3, checksum: 'c7' }, sent, 3);
    expect(r).toMatchObject({ ok: true, unchanged: false, session: { ackedVersion: 7, ackedEpoch: 3 } });
  });
  it('the first ACK of a session is the one that sets its bound: not a replay, a later one or a refused one', () => {
    const first = (s: WorkerSession, version: number) =>
      isFirstAck(s, acceptAck(s, { version, epoch: 3, checksum: `c${version}` }, sent, 3));
    expect(first(base, 7)).toBe(true);
    expect(first(base, 6)).toBe(true);
    expect(first(acked, 7)).toBe(false); // the replay
    expect(first({ ...acked, ackedVersion: 6, ackedChecksum: 'c6' }, 7)).toBe(false);
    expect(first(base, 8)).toBe(false); // unknown_snapshot
  });
});

describe('acceptRuntimeReport (contract §2)', () => {
  const first = acceptRuntimeReport(acked, report(), 3, now, 30_000);
  const after = first.ok ? first.session : acked;
  it.each<[string, WorkerSession, RuntimeReport, number, string | null]>([
    ['first report on the ACK bound', acked, report(), 3, null],
    ['no ACK yet', base, report(), 3, 'no_ack'],
    // SIGTERM during the start wait (registered, no snapshot yet): the worker's last word.
    [
      'no ACK yet, from a worker shutting down idle, naming no snapshot (version 0)',
      base,
      report({ snapshotVersion: 0, draining: true, counts: [] }),
      3,
      null,
    ],
    [
      "no ACK yet, version 0, an epoch below the current one (the registration's, drains began since)",
      base,
      report({ snapshotVersion: 0, epoch: 2, draining: true, counts: [] }),
      3,
      null,
    ],
    [
      'no ACK yet, version 0, not shutting down',
      base,
      report({ snapshotVersion: 0, counts: [] }),
      3,
      'no_ack',
    ],
    [
      'no ACK yet, version 0, shutting down but busy',
      base,
      report({ snapshotVersion: 0, draining: true }),
      3,
      'no_ack',
    ],
    [
      'no ACK yet, shutting down idle but naming a snapshot it never ACKed',
      base,
      report({ draining: true, counts: [] }),
      3,
      'no_ack',
    ],
    [
      "no ACK yet, version 0, an epoch ahead of the controller's",
      base,
      report({ snapshotVersion: 0, epoch: 4, draining: true, counts: [] }),
      3,
      'no_ack',
    ],
    [
      'version 0 once a snapshot was ACKed',
      acked,
      report({ snapshotVersion: 0, draining: true, counts: [] }),
      3,
      'ack_bound_mismatch',
    ],
    ['a snapshot version ahead of the ACK', acked, report({ snapshotVersion: 8 }), 3, 'ack_bound_mismatch'],
    ['an epoch ahead of the ACK', acked, report({ epoch: 4 }), 3, 'ack_bound_mismatch'],
    ['an epoch below the current one', acked, report(), 4, 'stale_epoch'],
    [
      'an epoch below the current one from a worker shutting down with nothing in flight',
      acked,
      report({ draining: true, counts: [] }),
      4,
      null,
    ],
    [
      'an epoch below the current one from a worker shutting down, still busy',
      acked,
      report({ draining: true, counts: [{ proxy: 'p1', active: 1, reserved: 0 }] }),
      4,
      'stale_epoch',
    ],
    ['a higher sequence', after, report({ reportSequence: 2 }), 3, null],
    ['an identical replay', after, report(), 3, null],
    ['the same sequence with other content', after, report({ counts: [] }), 3, 'sequence_conflict'],
    ['a smaller sequence', after, report({ reportSequence: 0 }), 3, 'sequence_regression'],
    [
      'duplicate proxies',
      acked,
      report({
        counts: [
          { proxy: 'a', active: 1, reserved: 0 },
          { proxy: 'a', active: 1, reserved: 0 },
        ],
      }),
      3,
      'invalid_counts',
    ],
    [
      'negative counts',
      acked,
      report({ counts: [{ proxy: 'a', active: -1, reserved: 0 }] }),
      3,
      'invalid_counts',
    ],
  ])('%s', (_n, session, r, epoch, error) => {
    const d = acceptRuntimeReport(session, r, epoch, now, 30_000);
    expect(d.ok ? null : d.error).toBe(error);
  });
  it('a replay is flagged and does not extend anything', () => {
    const d = acceptRuntimeReport(after, report(), 3, later(10), 30_000);
    expect(d).toMatchObject({ ok: true, replay: true });
    if (d.ok) expect(d.session.validUntil).toEqual(after.validUntil);
  });
  it('an accepted report extends the session', () => {
    const d = acceptRuntimeReport(after, report({ reportSequence: 2 }), 3, later(10), 30_000);
    if (!d.ok) throw new Error(d.error);
    expect(d.session.validUntil).toEqual(later(40));
  });

  // A busy worker shutting down whose drain outlasted the session TTL: its reports at the epoch it last
  // ACKed were refused stale_epoch since its drains began, so none kept the session alive. The caller has
  // checked that the session is still the worker's current one.
  describe('on a lapsed session', () => {
    const lapsed: WorkerSession = { ...after, validUntil: later(-1) };
    const lastWord = report({ reportSequence: 2, draining: true, counts: [] });
    it.each<[string, RuntimeReport, number, string | null]>([
      ['the last word of a worker shutting down idle, at an older epoch', lastWord, 4, null],
      ['a report with load', report({ reportSequence: 2 }), 3, 'session_expired'],
      [
        'a shutting-down report still busy',
        report({ reportSequence: 2, draining: true }),
        4,
        'session_expired',
      ],
      ['idle but not shutting down', report({ reportSequence: 2, counts: [] }), 3, 'session_expired'],
      ['the last word off the ACK bound', { ...lastWord, snapshotVersion: 8 }, 4, 'ack_bound_mismatch'],
      ['the last word under a used sequence', { ...lastWord, reportSequence: 1 }, 4, 'sequence_conflict'],
      ['the last word under an older sequence', { ...lastWord, reportSequence: 0 }, 4, 'sequence_regression'],
    ])('%s', (_n, r, epoch, error) => {
      const d = acceptRuntimeReport(lapsed, r, epoch, now, 30_000);
      expect(d.ok ? null : d.error).toBe(error);
    });
    it('takes the last word without reviving the session', () => {
      const d = acceptRuntimeReport(lapsed, lastWord, 4, now, 30_000);
      if (!d.ok) throw new Error(d.error);
      expect(d.session).toMatchObject({ validUntil: lapsed.validUntil, lastReportSequence: 2 });
    });
  });
});

describe('usable capacity fails closed (brief invariant 5)', () => {
  const valid: CapacityInputs = {
    capacity: 4,
    ownership: { owner: 'w1', epoch: 3, expiresAt: later(60) },
    ownerSessionId: 's1',
    report: {
      workerId: 'w1',
      sessionId: 's1',
      epoch: 3,
      receivedAt: now,
      draining: false,
      counts: [{ proxy: 'p1', active: 1, reserved: 1 }],
    },
    currentEpoch: 3,
    reportTtlMs: 15_000,
    now: later(5),
  };
  it.each<[string, Partial<CapacityInputs>, number, string | null]>([
    ['all valid: capacity minus counts', {}, 2, null],
    ['no owner', { ownership: { owner: null, epoch: 3, expiresAt: null } }, 0, 'no_owner'],
    [
      'ownership lapsed',
      { ownership: { owner: 'w1', epoch: 3, expiresAt: later(1) } },
      0,
      'ownership_expired',
    ],
    ['owner has no session', { ownerSessionId: null }, 0, 'no_session'],
    ['no report', { report: null }, 0, 'no_report'],
    ['report from a superseded session', { ownerSessionId: 's2' }, 0, 'report_from_other_session'],
    ['report past its TTL', { now: later(16) }, 0, 'report_expired'],
    ['epoch moved on', { currentEpoch: 4 }, 0, 'epoch_mismatch'],
  ])('%s', (_n, over, usable, reason) => {
    const x = { ...valid, ...over };
    expect(usableCapacity('p1', x)).toBe(usable);
    const v = countsFor('p1', x);
    expect(v.valid ? null : v.reason).toBe(reason);
  });
  it('a proxy absent from a valid sparse report has zero counts', () => {
    expect(usableCapacity('p2', valid)).toBe(4);
  });
  it("looking up every proxy of a worker's report reads its counts once, not once per proxy", () => {
    // GET /v1/gateway/ownership asks for each pool proxy, and a report holds up to 8,000 counts: a scan per
    // proxy was pool × counts (≈ 32 M comparisons at 8,000) on the API's event loop.
    const counts = Array.from({ length: 100 }, (_, i) => ({ proxy: `p${i}`, active: i % 3, reserved: 0 }));
    let reads = 0;
    const counted = new Proxy(counts, {
      get(target, prop, receiver) {
        if (typeof prop === 'string' && /^\d+$/.test(prop)) reads++;
        return Reflect.get(target, prop, receiver);
      },
    });
    const x = { ...valid, capacity: 10, report: { ...valid.report!, counts: counted } };
    const usable = counts.map((c) => usableCapacity(c.proxy, x));
    expect(usable).toEqual(counts.map((c) => 10 - c.active));
    expect(reads).toBeLessThanOrEqual(counts.length);
  });
});
