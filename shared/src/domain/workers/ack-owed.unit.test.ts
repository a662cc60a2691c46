import { describe, expect, it } from 'vitest';
import { ackOverdue, endsOverdue, nextAckOwed } from './ack-owed.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(t0.getTime() + s * 1000);

describe('the ACK a worker owes', () => {
  it('is recorded at the first version the session has not ACKed, and carried while it stays unpaid', () => {
    // Nothing recorded yet (a header stored before the field, or none at all): this version is owed.
    expect(nextAckOwed(null, 's1', null, 1, t0)).toEqual({ version: 1, since: t0 });
    expect(nextAckOwed({ sessionId: 's1' }, 's1', 4, 5, t0)).toEqual({ version: 5, since: t0 });
    const owed = { version: 5, since: t0 };
    // Versions 6 and 7 go out with 5 still unACKed: it is still 5 that is owed, since t0.
    expect(nextAckOwed({ sessionId: 's1', ackOwed: owed }, 's1', 4, 6, at(30))).toBe(owed);
    expect(nextAckOwed({ sessionId: 's1', ackOwed: owed }, 's1', null, 7, at(60))).toBe(owed);
  });

  it('starts again once paid (the owed version or a later one ACKed), or for a new session', () => {
    const owed = { version: 5, since: t0 };
    expect(nextAckOwed({ sessionId: 's1', ackOwed: owed }, 's1', 5, 6, at(30))).toEqual({
      version: 6,
      since: at(30),
    });
    expect(nextAckOwed({ sessionId: 's1', ackOwed: owed }, 's1', 6, 7, at(30))).toEqual({
      version: 7,
      since: at(30),
    });
    expect(nextAckOwed({ sessionId: 's1', ackOwed: owed }, 's2', null, 6, at(30))).toEqual({
      version: 6,
      since: at(30),
    });
  });

  it('is overdue from max_stale_age after it was recorded, unless paid', () => {
    const owed = { version: 5, since: t0 };
    expect(ackOverdue(owed, 4, at(149.999), 150)).toBe(false);
    expect(ackOverdue(owed, 4, at(150), 150)).toBe(true);
    expect(ackOverdue(owed, null, at(150), 150)).toBe(true);
    expect(ackOverdue(owed, 5, at(1000), 150)).toBe(false);
    expect(ackOverdue(owed, 9, at(1000), 150)).toBe(false);
    expect(ackOverdue(null, 4, at(1000), 150)).toBe(false);
    expect(ackOverdue(undefined, null, at(1000), 150)).toBe(false);
  });

  it('an ACK ends an overdue stretch only when it pays what was owed', () => {
    const owed = { version: 5, since: t0 };
    expect(endsOverdue(owed, 4, 5, at(200), 150)).toBe(true);
    expect(endsOverdue(owed, 4, 7, at(200), 150)).toBe(true);
    // Not overdue yet: an ordinary ACK, nothing to end.
    expect(endsOverdue(owed, 4, 5, at(100), 150)).toBe(false);
    // Overdue, and still unpaid after it (the worker ACKed something older than the owed version).
    expect(endsOverdue(owed, 3, 4, at(200), 150)).toBe(false);
    expect(endsOverdue(null, 4, 5, at(200), 150)).toBe(false);
  });
});
