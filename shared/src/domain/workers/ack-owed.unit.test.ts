import { describe, expect, it } from 'vitest';
import { type AckOwed, ackOverdue, endsOverdue, nextAckOwed, owedBy } from './ack-owed.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const t = (s: number) => new Date(t0.getTime() + s * 1000);
const S1 = { sessionId: 's1' };

describe('the ACK a worker owes', () => {
  /** The header of version `version` saved at `at` seconds for `sessionId`, recording `ackOwed`. */
  const header = (version: number, at: number, ackOwed?: AckOwed | null, sessionId = 's1') => ({
    sessionId,
    version,
    generatedAt: t(at),
    ackOwed,
  });

  it('is recorded at the first version the session has not ACKed, and carried while it stays unpaid', () => {
    // Nothing saved yet: this version is owed.
    expect(nextAckOwed(null, S1, null, 1, t0)).toEqual({ version: 1, since: t0 });
    // A header stored before the field, its version ACKed: this version is owed.
    expect(nextAckOwed(header(4, -30), S1, 4, 5, t0)).toEqual({ version: 5, since: t0 });
    const owed = { version: 5, since: t0 };
    // Versions 6 and 7 go out with 5 still unACKed: it is still 5 that is owed, since t0.
    expect(nextAckOwed(header(5, 0, owed), S1, 4, 6, t(30))).toBe(owed);
    expect(nextAckOwed(header(6, 30, owed), S1, null, 7, t(60))).toBe(owed);
  });

  it('once paid: the previous version if that one is unACKed still, else this one', () => {
    const owed = { version: 5, since: t0 };
    expect(nextAckOwed(header(6, 30, owed), S1, 6, 7, t(60))).toEqual({ version: 7, since: t(60) });
    // 5 was ACKed while 6 was being saved (the pass read the bound at 4): 6 is owed since it was saved.
    expect(nextAckOwed(header(6, 30, owed), S1, 5, 7, t(60))).toEqual({ version: 6, since: t(30) });
    // A header stored before the field, its version unACKed: that version is owed since it was saved.
    expect(nextAckOwed(header(4, -30), S1, 3, 5, t0)).toEqual({ version: 4, since: t(-30) });
  });

  it('a header built for another session owes nothing of this one’s', () => {
    const owed = { version: 5, since: t0 };
    expect(owedBy(header(6, 30, owed, 's0'), S1)).toBeNull();
    expect(owedBy(header(6, 30, owed), S1)).toBe(owed);
    expect(owedBy(header(6, 30), S1)).toBeNull();
    expect(owedBy(null, S1)).toBeNull();
    expect(nextAckOwed(header(6, 30, owed, 's0'), S1, null, 7, t(60))).toEqual({
      version: 7,
      since: t(60),
    });
  });

  it('a session that took its process’s bound across a protocol change owes what the old one owed', () => {
    // workers/session.ts boundFrom: dropped, a process withheld for an ACK it owed got its share back by
    // changing protocol version (the debt is recorded under the session the header was built for).
    const owed = { version: 5, since: t0 };
    const upgraded = { sessionId: 's2', boundFrom: ['s1'] };
    expect(owedBy(header(6, 30, owed), upgraded)).toBe(owed);
    expect(owedBy(header(6, 30, owed, 's0'), upgraded)).toBeNull();
    expect(owedBy(header(6, 30, owed), { sessionId: 's2' })).toBeNull();
    // The first snapshot built for the new session carries the debt on.
    expect(nextAckOwed(header(6, 30, owed), upgraded, 4, 7, t(60))).toBe(owed);
    expect(nextAckOwed(header(6, 30, null), upgraded, 4, 7, t(60))).toEqual({ version: 6, since: t(30) });
  });

  it('is overdue from max_stale_age after it was recorded, unless paid', () => {
    const owed = { version: 5, since: t0 };
    expect(ackOverdue(owed, 4, t(149.999), 150)).toBe(false);
    expect(ackOverdue(owed, 4, t(150), 150)).toBe(true);
    expect(ackOverdue(owed, null, t(150), 150)).toBe(true);
    expect(ackOverdue(owed, 5, t(1000), 150)).toBe(false);
    expect(ackOverdue(owed, 9, t(1000), 150)).toBe(false);
    expect(ackOverdue(null, 4, t(1000), 150)).toBe(false);
    expect(ackOverdue(undefined, null, t(1000), 150)).toBe(false);
  });

  it('an ACK ends an overdue stretch only when it pays what was owed', () => {
    const owed = { version: 5, since: t0 };
    expect(endsOverdue(owed, 4, 5, t(200), 150)).toBe(true);
    expect(endsOverdue(owed, 4, 7, t(200), 150)).toBe(true);
    // Not overdue yet: an ordinary ACK, nothing to end.
    expect(endsOverdue(owed, 4, 5, t(100), 150)).toBe(false);
    // Overdue, and still unpaid after it (the worker ACKed something older than the owed version).
    expect(endsOverdue(owed, 3, 4, t(200), 150)).toBe(false);
    expect(endsOverdue(null, 4, 5, t(200), 150)).toBe(false);
  });
});
