// A runtime report asks the snapshot function for a pass when it completes a drain (`drained`) or starts
// the worker's shutdown (`worker-draining`): on the transition only, so a worker reporting every few
// seconds does not ask again. A write given up at its deadline may land all the same (the gateway hears 503
// and its next report, a new sequence, finds the transition made): the cut call asks before its 503. A
// replay (the same sequence and content) asks again, in case the cut call had no time left to ask.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { register } from '../../../../shared/src/domain/workers/session.js';
import { DEFAULT_WORKER_SETTINGS } from '../../../../shared/src/domain/workers/settings.js';
import type { RuntimeRequestBody } from '../../../../shared/src/messages/worker-api.js';
import type { SnapshotRequest } from '../../../../shared/src/messages/worker-snapshot-request.js';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import { type WorkerRecord, WorkerStoreError } from '../../../../shared/src/ports/workers.js';
import type { WorkerPrincipal } from './auth.js';
import { reportRuntime } from './report-service.js';
import type { WorkerServiceDeps } from './service-deps.js';

const now = new Date('2026-01-01T00:00:00Z');
const principal: WorkerPrincipal = { label: 'token:gw-1', may: (id) => id === 'gw-1' };
const EPOCH = 4;

/** A session of gw-1 bound at snapshot 7 of epoch 4; p-7 is being drained away from it since epoch 4. */
function deps() {
  const session = {
    ...register(
      null,
      { workerId: 'gw-1', instanceId: 'i', zone: 'z', protocolVersion: 5, principal: principal.label },
      now,
      's-1',
      DEFAULT_WORKER_SETTINGS.sessionTtlMs,
    ).session,
    ackedVersion: 7,
    ackedEpoch: EPOCH,
    ackedChecksum: '0'.repeat(64),
  };
  let stored: WorkerRecord = { session, report: null };
  let token = 1;
  let cutNextWrite = false;
  let conflictNextWrite = false;
  const requests: SnapshotRequest[] = [];
  const d = {
    workers: {
      get: async () => ({ value: stored, token: String(token) }),
      put: async (record: WorkerRecord, expected: string | null) => {
        if (expected !== String(token)) throw new WorkerStoreError('conflict', 'stale');
        if (conflictNextWrite) {
          conflictNextWrite = false;
          token++; // another replica wrote the record meanwhile (touching nothing this report decides on)
          throw new WorkerStoreError('conflict', 'stale');
        }
        stored = record;
        token++;
        // The write lands, the call is cut (the store deadline or the request budget): the worker hears 503.
        if (cutNextWrite) {
          cutNextWrite = false;
          throw new WorkerStoreError('unavailable', 'deadline exceeded; the write may still land');
        }
      },
    },
    ownership: { epoch: async () => EPOCH },
    snapshots: { header: async () => ({ sessionId: 's-1', recent: [], draining: { 'p-7': EPOCH } }) },
    requester: { request: async (r: SnapshotRequest) => void requests.push(r) },
    clock: new ManualClock(now),
    log: memoryLogger(),
    settings: DEFAULT_WORKER_SETTINGS,
    newSessionId: () => 's-2',
  } as unknown as WorkerServiceDeps;
  return {
    send: (body: RuntimeRequestBody) => reportRuntime(d, principal, 'gw-1', body),
    requests,
    stored: () => stored,
    cutNextWrite: () => {
      cutNextWrite = true;
    },
    conflictNextWrite: () => {
      conflictNextWrite = true;
    },
  };
}

const report = (reportSequence: number, counts: RuntimeRequestBody['counts'], draining = false) =>
  ({
    sessionId: 's-1',
    reportSequence,
    snapshotVersion: 7,
    epoch: EPOCH,
    draining,
    counts,
  }) as RuntimeRequestBody;

const busy = [{ proxy: 'p-7', active: 2, reserved: 0 }];
const elsewhere = [{ proxy: 'p-1', active: 1, reserved: 0 }];

describe('reportRuntime: pass requests', () => {
  it('asks once when a report completes a drain: not again on the next report', async () => {
    const x = deps();
    expect(await x.send(report(1, busy))).toMatchObject({ replay: false, revokeProxyIds: ['p-7'] });
    expect(x.requests).toEqual([]);
    await x.send(report(2, elsewhere));
    expect(x.requests).toEqual([{ reason: 'drained', workerId: 'gw-1' }]);
    await x.send(report(3, elsewhere));
    expect(x.requests).toHaveLength(1);
  });

  // The gateway's own sequence: a report whose write landed after its call was given up hears 503, and
  // the next report is a new sequence, which finds the transition made. The cut call asks before its 503.
  it('a report that completed a drain, stored after its call was given up (503), asks before the 503', async () => {
    const x = deps();
    await x.send(report(1, busy));
    x.cutNextWrite();
    await expect(x.send(report(2, elsewhere))).rejects.toMatchObject({ kind: 'unavailable' });
    expect(x.stored().session.lastReportSequence).toBe(2);
    expect(x.requests).toEqual([{ reason: 'drained', workerId: 'gw-1' }]);
    // The gateway's next report (a new sequence) makes no transition; a same-sequence replay (another
    // client) asks again, in case the cut call had no time left to ask.
    expect(await x.send(report(3, elsewhere))).toMatchObject({ replay: false });
    expect(x.requests).toHaveLength(1);
    expect(await x.send(report(3, elsewhere))).toMatchObject({ replay: true });
    expect(x.requests).toEqual([
      { reason: 'drained', workerId: 'gw-1' },
      { reason: 'drained', workerId: 'gw-1' },
    ]);
  });

  it('asks once when the worker starts shutting down; so does its report cut as above', async () => {
    const x = deps();
    await x.send(report(1, busy));
    await x.send(report(2, busy, true));
    expect(x.requests).toEqual([{ reason: 'worker-draining', workerId: 'gw-1' }]);
    await x.send(report(3, busy, true));
    expect(x.requests).toHaveLength(1);

    const y = deps();
    await y.send(report(1, busy));
    y.cutNextWrite();
    await expect(y.send(report(2, busy, true))).rejects.toMatchObject({ kind: 'unavailable' });
    expect(y.requests).toEqual([{ reason: 'worker-draining', workerId: 'gw-1' }]);
    await y.send(report(3, busy, true));
    expect(y.requests).toHaveLength(1);
  });

  it('a write refused as a conflict asks nothing before its retry: the retry decides on what it reads', async () => {
    const x = deps();
    await x.send(report(1, busy));
    x.conflictNextWrite();
    expect(await x.send(report(2, elsewhere))).toMatchObject({ replay: false });
    expect(x.requests).toEqual([{ reason: 'drained', workerId: 'gw-1' }]);
  });

  it('a replay of a report that made no transition asks for nothing', async () => {
    const x = deps();
    await x.send(report(1, busy));
    expect(await x.send(report(1, busy))).toMatchObject({ replay: true });
    expect(x.requests).toEqual([]);
  });
});
