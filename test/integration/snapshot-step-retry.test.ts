// A tick is never retried itself, but a worker whose snapshot step failed in it must not wait for the next
// tick (a minute): after an epoch change its reports are refused stale_epoch until it has ACKed a snapshot
// of the new epoch, and its session lapses after 30 s. The tick asks for a pass by request instead, which
// Pub/Sub retries within seconds. On the Firestore emulator with the deployed stores; the snapshot
// publisher fails on demand and the pass requester records.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { handleSnapshotEvent, STEP_RETRY_REASON } from '../../functions/snapshot/src/handler.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { PublishError } from '../../shared/src/ports/publish-error.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const snapshots = new FirestoreSnapshotStore(db);
afterAll(() => db.terminate());

const T0 = new Date('2026-12-03T12:00:00Z');
const event = (data: object, publishTime?: Date) => ({
  data: {
    message: {
      data: Buffer.from(JSON.stringify(data)).toString('base64'),
      messageId: '1',
      ...(publishTime ? { publishTime: publishTime.toISOString() } : {}),
    },
  },
});
const secondsBefore = (s: number) => new Date(T0.getTime() - s * 1000);
const TICK = event({ job: 'snapshot-tick' });

/**
 * Two live workers and a proxy each, and pass deps whose publisher refuses gw-b's snapshots while `failing`
 * (with `refusal`: Pub/Sub unavailable by default).
 */
async function setup(refusal: () => Error = () => new Error('pubsub unavailable'), failingFor = ['gw-b']) {
  const workers = new FirestoreWorkerStore(db);
  await workers.put(record('gw-a', new Date(T0.getTime() + 30_000)), null);
  await workers.put(record('gw-b', new Date(T0.getTime() + 30_000)), null);
  const proxies = new FirestoreProxyStore(db);
  await proxies.create(poolProxy('px-1', 1));
  await proxies.create(poolProxy('px-2', 2));
  const published: GatewaySnapshotMessage[] = [];
  const log = memoryLogger();
  const deps = { ...firestorePassDeps(db, new ManualClock(T0), published), log };
  const state = { failing: true };
  const publish = deps.publisher.publish.bind(deps.publisher);
  deps.publisher = {
    publish: async (m) => {
      if (state.failing && failingFor.includes(m.workerId)) throw refusal();
      return publish(m);
    },
  };
  return { deps, published, log, state };
}

beforeEach(async () => {
  await clearProject(projectId);
});

describe('a worker snapshot step that fails in a tick', () => {
  it('is asked for again by request at once, and that request builds the snapshot', async () => {
    const { deps, published, log, state } = await setup();
    const tick = await handleSnapshotEvent(deps, TICK);
    expect(tick.outcome).toBe('done');
    expect(tick.summary).toMatchObject({ failures: 1, published: 1 });
    expect(published.map((m) => m.workerId)).toEqual(['gw-a']);
    expect(deps.requester.requests).toEqual([{ reason: STEP_RETRY_REASON }]);
    expect(log.lines).toContainEqual(expect.objectContaining({ severity: 'ERROR', workerId: 'gw-b' }));

    // The request as Pub/Sub delivers it: while the step still fails it throws (Pub/Sub redelivers,
    // 5 s and up), and asks for nothing more itself.
    await expect(handleSnapshotEvent(deps, event(deps.requester.requests[0]!))).rejects.toThrow(
      'worker snapshot step(s) failed',
    );
    expect(deps.requester.requests).toHaveLength(1);
    state.failing = false;
    expect((await handleSnapshotEvent(deps, event(deps.requester.requests[0]!))).outcome).toBe('done');
    expect(published.map((m) => m.workerId)).toEqual(['gw-a', 'gw-b']);
    expect((await snapshots.loadFull('gw-b'))?.proxies).toHaveLength(1);
  });

  it('is retried while the worker’s session could still be saved, then left to the next tick', async () => {
    // A step that keeps failing: without a bound each tick would start ~10 passes over 10 minutes and
    // dead-letter a request every minute.
    const { deps, log } = await setup();
    await handleSnapshotEvent(deps, TICK);
    const retry = deps.requester.requests[0]!;
    await expect(handleSnapshotEvent(deps, event(retry, secondsBefore(25)))).rejects.toThrow();
    expect((await handleSnapshotEvent(deps, event(retry, secondsBefore(30)))).outcome).toBe('retry_given_up');
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'WARNING',
        message: 'step-retry request acknowledged unserved: the next tick runs the pass again',
      }),
    );
    expect(deps.requester.requests).toHaveLength(1);
  });

  it('a request naming another worker is not redelivered for it: a pass is asked for, as a tick does', async () => {
    // gw-a registered; gw-b's publishes fail (Pub/Sub refusing them for up to 10 minutes while an
    // unconfirmed one is in the client's hands). Redelivered for gw-b, gw-a's request would run a whole
    // pass each time, for up to ten attempts, and push other passes into PlannerBusy.
    const { deps, published } = await setup();
    const r = await handleSnapshotEvent(
      deps,
      event({ reason: 'register', workerId: 'gw-a' }, secondsBefore(1)),
    );
    expect(r.outcome).toBe('done');
    expect(r.summary).toMatchObject({ failures: 1, failed: [{ workerId: 'gw-b', permanent: false }] });
    expect(published.map((m) => m.workerId)).toEqual(['gw-a']);
    expect(deps.requester.requests).toEqual([{ reason: STEP_RETRY_REASON }]);
  });

  it.each([
    ['alone', ['gw-b'], []],
    // Redelivered, the request's pass retried the others' steps too; once it is given up, nothing else
    // would before the next tick: a pass is asked for them.
    [
      'with another worker’s (asked for once the request is given up)',
      ['gw-a', 'gw-b'],
      [{ reason: STEP_RETRY_REASON }],
    ],
  ])(
    'a request naming the worker whose step failed is redelivered, for a worker session’s TTL: %s',
    async (_l, failing, asked) => {
      const { deps, log } = await setup(undefined, failing);
      const register = { reason: 'register', workerId: 'gw-b' };
      await expect(handleSnapshotEvent(deps, event(register, secondsBefore(5)))).rejects.toThrow(
        'worker snapshot step(s) failed (gw-b)',
      );
      expect(deps.requester.requests).toEqual([]);
      // Its pass ran (its news was seen): past a session's TTL it is acknowledged, and left to the next tick.
      expect((await handleSnapshotEvent(deps, event(register, secondsBefore(30)))).outcome).toBe(
        'retry_given_up',
      );
      expect(log.lines).toContainEqual(
        expect.objectContaining({
          severity: 'WARNING',
          message:
            'snapshot request acknowledged with a step still failing: the next tick runs the pass again',
        }),
      );
      expect(deps.requester.requests).toEqual(asked);
    },
  );

  it('a step refused for good (a snapshot over the publisher’s limit) is neither redelivered nor asked for', async () => {
    const { deps, published, log } = await setup(
      () => new PublishError('invalid_payload', 'snapshot 1 for gw-b is 9437185 bytes'),
    );
    const tick = await handleSnapshotEvent(deps, TICK);
    expect(tick.summary).toMatchObject({ failures: 1, failed: [{ workerId: 'gw-b', permanent: true }] });
    expect(deps.requester.requests).toEqual([]);
    const r = await handleSnapshotEvent(
      deps,
      event({ reason: 'register', workerId: 'gw-b' }, secondsBefore(1)),
    );
    expect(r.outcome).toBe('done');
    expect(deps.requester.requests).toEqual([]);
    expect(published.map((m) => m.workerId)).toEqual(['gw-a']);
    // Stored all the same (the worker fetches it, GET …/snapshot), and logged on every pass that tries it.
    expect((await snapshots.loadFull('gw-b'))?.proxies).toHaveLength(1);
    expect(
      log.lines.filter((l) => l.message === 'snapshot step failed' && l.permanent === true),
    ).toHaveLength(2);
  });

  it('a tick whose steps all succeed asks for nothing', async () => {
    const { deps, published, state } = await setup();
    state.failing = false;
    expect((await handleSnapshotEvent(deps, TICK)).summary).toMatchObject({ failures: 0, published: 2 });
    expect(published).toHaveLength(2);
    expect(deps.requester.requests).toEqual([]);
  });

  it('a request that cannot be sent either is logged: the tick still ends well, the next one retries', async () => {
    const { deps, log } = await setup();
    deps.requester.request = async () => {
      throw new Error('pubsub unavailable');
    };
    expect((await handleSnapshotEvent(deps, TICK)).outcome).toBe('done');
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'WARNING',
        message: 'worker snapshot steps failed and no pass could be requested; the next tick runs one',
        failures: 1,
      }),
    );
  });
});

describe('a request whose whole pass fails the same way on every delivery', () => {
  // A stored document edited out of shape (the routing with no snapshot published before it) fails every
  // pass until someone fixes it: redelivered, the
  // request ran ten passes for nothing and was dead-lettered (the dead-letters alert firing for it).
  it.each([
    ['the routing', 'gatewayConfig', 'routing', { routes: 'all of them' }],
    ['an ownership shard', 'ownership', 'shard-03', { proxies: ['px-1'] }],
  ])('%s out of shape: acknowledged and logged as an ERROR; a tick says so too', async (_l, col, id, doc) => {
    const { deps, published, log, state } = await setup();
    state.failing = false;
    await db.collection(col).doc(id).set(doc);
    const r = await handleSnapshotEvent(
      deps,
      event({ reason: 'register', workerId: 'gw-a' }, secondsBefore(1)),
    );
    expect(r.outcome).toBe('unservable');
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'snapshot request acknowledged unserved: the pass cannot run until this is fixed',
      }),
    );
    expect((await handleSnapshotEvent(deps, TICK)).outcome).toBe('busy_tick');
    expect(published).toEqual([]);
    expect(deps.requester.requests).toEqual([]);

    // Fixed by hand, the next delivery's pass runs.
    await db.collection(col).doc(id).delete();
    expect((await handleSnapshotEvent(deps, TICK)).outcome).toBe('done');
    expect(published.map((m) => m.workerId).sort()).toEqual(['gw-a', 'gw-b']);
  });
});
