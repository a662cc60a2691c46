import { describe, expect, it } from 'vitest';
import { acked } from '../../testing/worker-sessions.js';
import { negotiateProtocol } from './protocol.js';
import { checkSession, register } from './session.js';

const now = new Date('2026-01-01T00:00:00Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const req = {
  workerId: 'w1',
  instanceId: 'i1',
  zone: 'us-central1-a',
  protocolVersion: 1,
  principal: 'token:w1',
};

describe('negotiateProtocol (contract §7)', () => {
  it.each<[number, boolean]>([
    [1, true],
    [2, true],
    [3, true],
    [4, true],
    [5, true],
    [0, false],
    [6, false],
    [1.5, false],
  ])('version %s → %s', (v, ok) => expect(negotiateProtocol(v).ok).toBe(ok));
});

describe('register / checkSession (contract §2)', () => {
  const first = register(null, req, now, 's1', 30_000);
  it('a first registration opens a session', () => {
    expect(first).toMatchObject({ kind: 'new', supersededSessionId: null, session: { sessionId: 's1' } });
  });
  it('a retry from the same live instance resumes its session', () => {
    const again = register(first.session, req, later(5), 's2', 30_000);
    expect(again).toMatchObject({ kind: 'resumed', session: { sessionId: 's1' } });
  });
  it('a new instance supersedes the old session', () => {
    const restarted = register(first.session, { ...req, instanceId: 'i2' }, later(5), 's2', 30_000);
    expect(restarted).toMatchObject({ kind: 'new', supersededSessionId: 's1', session: { sessionId: 's2' } });
    expect(checkSession(restarted.session, 's1', later(6))).toEqual({ ok: false, error: 'stale_session' });
    expect(checkSession(restarted.session, 's2', later(6))).toEqual({ ok: true });
  });
  it('the same live instance offering another protocol version gets a new session at that version', () => {
    // A worker that stepped down to 1 offers 2 again once the controller speaks it (the gateway's
    // control/protocol-upgrade.ts); resuming would keep it at 1 for its whole life.
    const upgraded = register(first.session, { ...req, protocolVersion: 2 }, later(5), 's2', 30_000);
    expect(upgraded).toMatchObject({
      kind: 'new',
      supersededSessionId: 's1',
      session: { sessionId: 's2', protocolVersion: 2, ackedVersion: null },
    });
    expect(checkSession(upgraded.session, 's1', later(6))).toEqual({ ok: false, error: 'stale_session' });
  });
  it('moving to another protocol version, the same live process keeps its ACK bound; no other one does', () => {
    // It still holds the snapshot it ACKed: without the bound its share started draining at once.
    const held = acked(first.session, 7, 3);
    const bound = { ackedVersion: 7, ackedEpoch: 3, ackedChecksum: held.ackedChecksum, boundFrom: ['s1'] };
    const upgraded = register(held, { ...req, protocolVersion: 2 }, later(5), 's2', 30_000);
    expect(upgraded).toMatchObject({
      kind: 'new',
      session: { sessionId: 's2', protocolVersion: 2, ...bound },
    });
    expect(upgraded.session).toMatchObject({ lastReportSequence: null, outcomeSequence: 0 });
    const none = { ackedVersion: null, ackedEpoch: null, ackedChecksum: null };
    // Another process, another principal, or a session that lapsed: the new session ACKs for itself.
    expect(register(held, { ...req, instanceId: 'i2' }, later(5), 's3', 30_000).session).toMatchObject(none);
    expect(
      register(held, { ...req, principal: 'token:other' }, later(5), 's3', 30_000).session,
    ).toMatchObject(none);
    expect(register(held, { ...req, protocolVersion: 2 }, later(31), 's3', 30_000).session).toMatchObject(
      none,
    );
  });
  it('the same instance after its session lapsed gets a new session', () => {
    expect(register(first.session, req, later(31), 's3', 30_000)).toMatchObject({
      kind: 'new',
      supersededSessionId: 's1',
    });
  });
  it.each<[string, string, number, string | null]>([
    ['unknown worker', 's1', 1, 'unknown_worker'],
    ['current session', 's1', 1, null],
    ['other session', 'sX', 1, 'stale_session'],
    ['expired session', 's1', 31, 'session_expired'],
  ])('checkSession: %s', (name, sid, at, error) => {
    const r = checkSession(name === 'unknown worker' ? null : first.session, sid, later(at));
    expect(r.ok ? null : r.error).toBe(error);
  });
});
