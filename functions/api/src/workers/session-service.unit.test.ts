// The ACK path asks the snapshot function for a pass exactly when a session records its first ACK, or
// pays an ACK it had owed past max_stale_age: the planner gives a session proxies only from then on
// (plan-pass.ts assignable), and the next tick may be a minute away. So does a write given up at its
// deadline (it may land all the same), and a replayed ACK (it may replay a first ACK whose answer was lost
// after its write landed); a later ACK, or another racing the first, asks for nothing more; a failed
// request is logged and never fails the ACK.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { ackOverdue, owedBy } from '../../../../shared/src/domain/workers/ack-owed.js';
import { register } from '../../../../shared/src/domain/workers/session.js';
import { DEFAULT_WORKER_SETTINGS } from '../../../../shared/src/domain/workers/settings.js';
import type { SnapshotRequest } from '../../../../shared/src/messages/worker-snapshot-request.js';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import { type WorkerRecord, WorkerStoreError } from '../../../../shared/src/ports/workers.js';
import type { WorkerPrincipal } from './auth.js';
import type { WorkerServiceDeps } from './service-deps.js';
import { acknowledgeSnapshot, registerWorker } from './session-service.js';

const now = new Date('2026-01-01T00:00:00Z');
const principal: WorkerPrincipal = { label: 'token:gw-1', may: (id) => id === 'gw-1' };
const checksum = (v: number) => String(v).padStart(64, '0');
const ack = (version: number, epoch = 3) => ({
  sessionId: 's-1',
  version,
  epoch,
  checksum: checksum(version),
});

function deps(
  opts: { requestFails?: boolean; ackOwed?: { version: number; since: Date }; headerSession?: string } = {},
) {
  const session = register(
    null,
    { workerId: 'gw-1', instanceId: 'i', zone: 'z', protocolVersion: 5, principal: principal.label },
    now,
    's-1',
    DEFAULT_WORKER_SETTINGS.sessionTtlMs,
  ).session;
  let stored: WorkerRecord = { session, report: null };
  let token = 1;
  const requests: SnapshotRequest[] = [];
  let requestFails = opts.requestFails ?? false;
  const log = memoryLogger();
  const d = {
    workers: {
      get: async () => ({ value: stored, token: String(token) }),
      put: async (record: WorkerRecord, expected: string | null) => {
        if (expected !== String(token)) throw new WorkerStoreError('conflict', 'stale');
        stored = record;
        token++;
      },
    },
    ownership: { epoch: async () => 3 },
    snapshots: {
      header: async () => ({
        sessionId: opts.headerSession ?? 's-1',
        recent: [1, 2, 3].map((v) => ({ version: v, epoch: 3, checksum: checksum(v) })),
        ackOwed: opts.ackOwed ?? null,
      }),
    },
    requester: {
      request: async (r: SnapshotRequest) => {
        if (requestFails) throw new Error('pubsub down');
        requests.push(r);
      },
    },
    clock: new ManualClock(now),
    log,
    settings: DEFAULT_WORKER_SETTINGS,
    newSessionId: () => 's-2',
  } as unknown as WorkerServiceDeps;
  return {
    d,
    requests,
    log,
    stored: () => stored,
    requestsWork: () => {
      requestFails = false;
    },
    // What another replica does: records an ACK of version 1 on the stored session.
    ackedElsewhere: () => {
      stored = {
        ...stored,
        session: { ...stored.session, ackedVersion: 1, ackedEpoch: 3, ackedChecksum: checksum(1) },
      };
      token++;
    },
  };
}

describe('acknowledgeSnapshot', () => {
  it('asks for a pass on the first ACK of the session, not on the next one', async () => {
    const x = deps();
    expect(await acknowledgeSnapshot(x.d, principal, 'gw-1', ack(1))).toEqual({
      acceptedVersion: 1,
      acceptedEpoch: 3,
      unchanged: false,
    });
    expect(x.requests).toEqual([{ reason: 'first-ack', workerId: 'gw-1' }]);
    // A later snapshot ACKed: the session was given proxies already.
    expect(await acknowledgeSnapshot(x.d, principal, 'gw-1', ack(2))).toMatchObject({ unchanged: false });
    expect(x.requests).toHaveLength(1);
    expect(x.stored().session.ackedVersion).toBe(2);
  });

  it('asks for a pass when an ACK pays one owed past max_stale_age: the worker takes snapshots again', async () => {
    const owed = { version: 2, since: new Date(now.getTime() - 150_000) };
    const x = deps({ ackOwed: owed });
    x.ackedElsewhere(); // the bound at 1: the worker owes 2 since 150 s ago
    expect(await acknowledgeSnapshot(x.d, principal, 'gw-1', ack(2))).toMatchObject({ unchanged: false });
    expect(x.requests).toEqual([{ reason: 'ack-resumed', workerId: 'gw-1' }]);
    // Owed for less than max_stale_age: an ordinary ACK, no request.
    const y = deps({ ackOwed: { version: 2, since: new Date(now.getTime() - 149_000) } });
    y.ackedElsewhere();
    await acknowledgeSnapshot(y.d, principal, 'gw-1', ack(3));
    expect(y.requests).toEqual([]);
    // Owed by another session of the worker (the header not rebuilt for this one yet): not this one's.
    const z = deps({ ackOwed: owed, headerSession: 's-0' });
    z.ackedElsewhere();
    await acknowledgeSnapshot(z.d, principal, 'gw-1', ack(2));
    expect(z.requests).toEqual([]);
  });

  // A write given up at its deadline may land all the same: the worker hears 503 and sends the ACK again,
  // which finds the bound set — no first ACK any more. The pass is asked for by the cut call itself, and
  // again by the replay (in case the cut call had no time left to ask).
  describe('a first ACK whose write landed after its call was given up (503)', () => {
    const cutOnce = (x: ReturnType<typeof deps>) => {
      x.d.workers.put = ((put) => {
        let cut = false;
        return async (record: WorkerRecord, expected: string | null) => {
          await put(record, expected);
          if (!cut) {
            cut = true;
            throw new WorkerStoreError('unavailable', 'deadline exceeded; the write may still land');
          }
        };
      })(x.d.workers.put.bind(x.d.workers));
    };

    it('asks for the pass before its 503, and its replay asks again', async () => {
      const x = deps();
      cutOnce(x);
      await expect(acknowledgeSnapshot(x.d, principal, 'gw-1', ack(1))).rejects.toMatchObject({
        kind: 'unavailable',
      });
      expect(x.stored().session.ackedVersion).toBe(1);
      expect(x.requests).toEqual([{ reason: 'first-ack', workerId: 'gw-1' }]);
      // The worker sends it again: answered as the first would have been.
      expect(await acknowledgeSnapshot(x.d, principal, 'gw-1', ack(1))).toEqual({
        acceptedVersion: 1,
        acceptedEpoch: 3,
        unchanged: true,
      });
      expect(x.requests).toEqual([
        { reason: 'first-ack', workerId: 'gw-1' },
        { reason: 'ack-replayed', workerId: 'gw-1' },
      ]);
    });

    it('the cut call with nothing left to ask with (its request failed): the replay asks', async () => {
      const x = deps({ requestFails: true });
      cutOnce(x);
      await expect(acknowledgeSnapshot(x.d, principal, 'gw-1', ack(1))).rejects.toMatchObject({
        kind: 'unavailable',
      });
      expect(x.log.lines).toEqual([expect.objectContaining({ reason: 'first-ack', severity: 'WARNING' })]);
      x.requestsWork();
      expect(await acknowledgeSnapshot(x.d, principal, 'gw-1', ack(1))).toMatchObject({ unchanged: true });
      expect(x.requests).toEqual([{ reason: 'ack-replayed', workerId: 'gw-1' }]);
    });
  });

  it('a refused first ACK asks for nothing', async () => {
    const x = deps();
    await expect(acknowledgeSnapshot(x.d, principal, 'gw-1', ack(9))).rejects.toMatchObject({
      code: 'unknown_snapshot',
    });
    expect(x.requests).toEqual([]);
    expect(x.stored().session.ackedVersion).toBeNull();
  });

  it('of two ACKs racing, only the one that set the bound asks: the other re-reads and finds it set', async () => {
    const x = deps();
    x.d.workers.put = ((put) => {
      let raced = false;
      return async (record: WorkerRecord, expected: string | null) => {
        if (!raced) {
          raced = true;
          x.ackedElsewhere();
        }
        return put(record, expected);
      };
    })(x.d.workers.put.bind(x.d.workers));
    expect(await acknowledgeSnapshot(x.d, principal, 'gw-1', ack(2))).toMatchObject({ acceptedVersion: 2 });
    expect(x.stored().session.ackedVersion).toBe(2);
    expect(x.requests).toEqual([]);
  });

  it('a request that fails is logged and the ACK still succeeds', async () => {
    const x = deps({ requestFails: true });
    expect(await acknowledgeSnapshot(x.d, principal, 'gw-1', ack(1))).toMatchObject({ acceptedVersion: 1 });
    expect(x.stored().session.ackedVersion).toBe(1);
    expect(x.log.lines).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        message: 'snapshot request not sent; the next tick will run the pass',
        reason: 'first-ack',
        workerId: 'gw-1',
      }),
    ]);
  });
});

describe('registerWorker: the same process changing protocol version', () => {
  const again = { workerId: 'gw-1', instanceId: 'i', zone: 'z', supportedProtocolVersion: 4 };
  const withSubscriptions = (d: WorkerServiceDeps) =>
    ({ ...d, subscriptions: { ensure: async () => 'projects/p/subscriptions/gw-1' } }) as WorkerServiceDeps;
  const maxStaleMs = DEFAULT_WORKER_SETTINGS.maxStaleAgeSeconds * 1000;

  it('keeps its ACK bound, and the ACK it owes: a process withheld for one stays withheld', async () => {
    // Cold review of 890638ab: the debt is recorded under the session a snapshot was built for; a new
    // session without it (its bound dropped or not) owed nothing, re-ACKed what it held and got its share.
    const since = new Date(now.getTime() - maxStaleMs - 1_000);
    const t = deps({ ackOwed: { version: 2, since } });
    t.ackedElsewhere();
    const answer = await registerWorker(withSubscriptions(t.d), principal, again);
    expect(answer).toMatchObject({ sessionId: 's-2', resumed: false, protocolVersion: 4 });
    const session = t.stored().session;
    expect(session).toMatchObject({ sessionId: 's-2', ackedVersion: 1, boundFrom: ['s-1'] });
    const header = await t.d.snapshots.header('gw-1');
    expect(ackOverdue(owedBy(header, session), session.ackedVersion, now, maxStaleMs / 1000)).toBe(true);
    // Its re-ACK of the snapshot it holds is a replay of the bound, not a first ACK, and pays nothing.
    const before = t.requests.length;
    await acknowledgeSnapshot(t.d, principal, 'gw-1', { ...ack(1), sessionId: 's-2' });
    expect(t.requests.slice(before).map((r) => r.reason)).toEqual(['ack-replayed']);
    expect(t.stored().session).toMatchObject({ ackedVersion: 1, boundFrom: ['s-1'] });
  });
});
