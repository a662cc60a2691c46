// A commit the Firestore client sends again after its first attempt landed (the answer was lost: the client
// resends a commit on UNAVAILABLE, RESOURCE_EXHAUSTED and ABORTED) fails its own precondition. Each store
// knows its own write by the mark it left (a `writeId`, a commit id, the lock it took, the deletion time),
// so it answers written — not a race lost, which made the probe decide again on top of its own result
// (one probe counted twice), a PUT with If-Match answer 412 for a change it made, and the snapshot pass
// give its own planner lock up as lost. On the Firestore emulator, with the real client; the second
// sending is test/support/replayed-commit-firestore.ts.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeDecisions } from '../../functions/probe/src/health-writes.js';
import { FirestoreHealthStore } from '../../shared/src/adapters/firestore/health-store.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestorePassiveFeedStore } from '../../shared/src/adapters/firestore/passive-feed-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import type { HealthDecision, ProxyHealthState } from '../../shared/src/domain/health/proxy-health.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { failNextCommitAfterLanding, replayCommits } from '../support/replayed-commit-firestore.js';

const at = new Date('2026-03-01T00:00:00Z');
const state = (proxy: string, consecutiveOk: number): ProxyHealthState => ({
  proxy,
  instance: 'zones/z/instances/pp-a@2026-03-01T00:00:00.000Z',
  tracks: { BASIC: { verdict: 'AVAILABLE', consecutiveOk, consecutiveFail: 0 } },
  verdict: 'AVAILABLE',
  latency: { reportedMs: 42, reportedAt: at },
  egressProblem: null,
  transitionAt: at,
  latencyHistory: [],
  passive: null,
});
const okCount = (s: ProxyHealthState | null) => s?.tracks.BASIC?.consecutiveOk;

describe('a commit sent again after it landed is the pass’s own write, not a race lost', () => {
  const projectId = testProjectId();
  let db: Firestore;
  let plain: FirestoreHealthStore;
  let replayed: { replayed: number };
  let store: FirestoreHealthStore;
  beforeAll(() => {
    plain = new FirestoreHealthStore(new Firestore({ projectId }));
    db = new Firestore({ projectId });
    replayed = replayCommits(db);
    store = new FirestoreHealthStore(db);
  });
  afterAll(async () => {
    await db.terminate();
    await releaseProject(projectId);
  });

  it('a first write (create) and a write on top of a version both read as written, and are stored once', async () => {
    const before = replayed.replayed;
    expect(await store.writeMany([{ state: state('r-one', 1), base: null }])).toEqual(['written']);
    const { version } = (await plain.getMany(['r-one'])).get('r-one')!;
    expect(await store.writeMany([{ state: state('r-one', 2), base: version }])).toEqual(['written']);
    expect(replayed.replayed - before).toBe(2);
    expect(okCount(await plain.get('r-one'))).toBe(2);
  });

  it('a batch of several, and one written on its own after a real race, each read as written', async () => {
    await plain.writeMany([{ state: state('r-b', 1), base: null }]);
    const stale = (await plain.getMany(['r-b'])).get('r-b')!.version;
    await plain.writeMany([{ state: state('r-b', 5), base: stale }]); // another pass wrote r-b since
    const results = await store.writeMany([
      { state: state('r-a', 1), base: null },
      { state: state('r-b', 2), base: stale },
      { state: state('r-c', 1), base: null },
    ]);
    // The batch failed on r-b (a real race: nothing written); sent one by one, r-a and r-c land (each sent
    // twice) and r-b still loses to the other pass.
    expect(results).toEqual(['written', 'conflict', 'written']);
    expect(okCount(await plain.get('r-b'))).toBe(5);
    const fresh = await plain.getMany(['r-a', 'r-c']);
    const batch = await store.writeMany([
      { state: state('r-a', 2), base: fresh.get('r-a')!.version },
      { state: state('r-c', 2), base: fresh.get('r-c')!.version },
    ]);
    expect(batch).toEqual(['written', 'written']);
  });

  it('the active pass publishes its decision and decides nothing again', async () => {
    await plain.writeMany([{ state: state('r-pass', 1), base: null }]);
    const { version, state: stored } = (await plain.getMany(['r-pass'])).get('r-pass')!;
    const decide = (s: ProxyHealthState | null): HealthDecision => ({
      next: state('r-pass', (okCount(s) ?? 0) + 1),
      write: true,
      publish: 'health-transition',
    });
    const redecided: (ProxyHealthState | null)[] = [];
    const warnings: string[] = [];
    const out = await storeDecisions(
      { health: store, log: { info: () => {}, warn: (m) => warnings.push(m) } },
      [
        {
          decision: decide(stored),
          base: version,
          redecide: (fresh) => {
            redecided.push(fresh);
            return decide(fresh);
          },
        },
      ],
    );
    expect(redecided).toEqual([]); // before the write id: decided again on its own write, up to the retries
    expect(out).toMatchObject({ written: 1, decisions: [{ publish: 'health-transition' }] });
    expect(okCount(await plain.get('r-pass'))).toBe(2);
    expect(warnings).toEqual([]);
  });

  it('a passive commit (health states and cursor at once) reads as committed', async () => {
    const feed = new FirestorePassiveFeedStore(db);
    const plainFeed = new FirestorePassiveFeedStore(new Firestore({ projectId }));
    const through = new Date('2026-03-01T00:01:00Z');
    expect(
      await feed.commit(
        [{ state: state('r-passive', 1), base: null }],
        { through, tracked: ['r-passive'] },
        null,
      ),
    ).toBe('committed');
    const cursor = (await plainFeed.cursor())!;
    expect(cursor).toMatchObject({ through, tracked: ['r-passive'] });
    const { version } = (await plain.getMany(['r-passive'])).get('r-passive')!;
    const later = new Date('2026-03-01T00:02:00Z');
    expect(
      await feed.commit(
        [{ state: state('r-passive', 2), base: version }],
        { through: later, tracked: [] },
        cursor.token,
      ),
    ).toBe('committed');
    expect((await plainFeed.cursor())!.through).toEqual(later);
    // A cursor another tick moved is still a conflict, with nothing written.
    expect(
      await feed.commit([], { through: new Date('2026-03-01T00:03:00Z'), tracked: [] }, cursor.token),
    ).toBe('conflict');
    expect((await plainFeed.cursor())!.through).toEqual(later);
    expect(okCount(await plain.get('r-passive'))).toBe(2);
  });
});

/**
 * Two clients of one test project for the describe it is called in: `db`, whose commits are each sent
 * twice (`sent` counts them), and `plainDb`, which reads what landed.
 */
function twoClients() {
  const projectId = testProjectId();
  const c = {
    db: null as unknown as Firestore,
    plainDb: null as unknown as Firestore,
    sent: { replayed: 0 },
  };
  beforeAll(() => {
    c.db = new Firestore({ projectId });
    c.plainDb = new Firestore({ projectId });
    c.sent = replayCommits(c.db);
  });
  afterAll(async () => {
    await Promise.all([c.db.terminate(), c.plainDb.terminate()]);
    await releaseProject(projectId);
  });
  return c;
}

describe('a proxy write sent again after it landed reads as written', () => {
  const c = twoClients();
  let store: FirestoreProxyStore;
  let plain: FirestoreProxyStore;
  beforeAll(() => {
    store = new FirestoreProxyStore(c.db);
    plain = new FirestoreProxyStore(c.plainDb);
  });

  it('a spec edit, a status write and a deletion at a version: each written once', async () => {
    await store.create(aProxy({ name: 'r-proxy', uid: '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f' }));
    let read = (await plain.get('r-proxy'))!;
    const spec = managedSpec({ machineType: 'e2-medium' });
    expect(await store.replaceSpec('r-proxy', spec, read.version)).toBe('written');
    read = (await plain.get('r-proxy'))!;
    expect(read.proxy).toMatchObject({ generation: 2, spec: { machineType: 'e2-medium' } });
    const status = { ...read.proxy.status, ip: '10.0.0.5', observedGeneration: 2 };
    expect(await store.writeStatus('r-proxy', status, read.version)).toBe('written');
    read = (await plain.get('r-proxy'))!;
    expect(read.proxy.status).toMatchObject({ ip: '10.0.0.5', observedGeneration: 2 });
    const at = new Date('2026-03-01T00:00:00.123Z');
    expect(await store.requestDeletion('r-proxy', at, read.version)).toBe('written');
    expect((await plain.get('r-proxy'))!.proxy.deletionRequestedAt).toEqual(at);
    expect(c.sent.replayed).toBe(4); // the create, the spec, the status and the deletion: each sent twice
    // A write on top of a version another writer moved since is still a conflict, with nothing written.
    expect(await store.writeStatus('r-proxy', { ...status, ip: '10.0.0.6' }, read.version)).toBe('conflict');
    expect((await plain.get('r-proxy'))!.proxy.status.ip).toBe('10.0.0.5');
  });
});

/**
 * Patches `db` so that its next commit is sent, then `between()` runs — another writer's commit landing on
 * top while the client waits to send it again — and then it is sent again, failing its own precondition on
 * a document that no longer holds only its write. Later commits go through untouched.
 */
function interleaveOnce(db: Firestore, between: () => Promise<unknown>): void {
  type Request = (method: string, ...rest: unknown[]) => Promise<unknown>;
  const client = db as unknown as { request: Request };
  const send = client.request.bind(db);
  client.request = async (method, ...rest) => {
    if (method !== 'commit') return send(method, ...rest);
    client.request = send;
    await send(method, ...rest);
    await between();
    return send(method, ...rest);
  };
}

describe('a write sent again after another writer wrote on top of it is still its own', () => {
  const projectId = testProjectId();
  let db: Firestore;
  let plainDb: Firestore;
  let store: FirestoreProxyStore;
  let plain: FirestoreProxyStore;
  beforeAll(() => {
    db = new Firestore({ projectId });
    plainDb = new Firestore({ projectId });
    store = new FirestoreProxyStore(db);
    plain = new FirestoreProxyStore(plainDb);
  });
  afterAll(async () => {
    await Promise.all([db.terminate(), plainDb.terminate()]);
    await releaseProject(projectId);
  });

  // A reconcile pass reading the new generation and writing status before the resend: the PUT's own edit
  // was taken for another writer's, and the retried PUT answered 412 for it.
  it('a spec edit with a status written on top of it: written', async () => {
    await plain.create(aProxy({ name: 'i-spec', uid: '0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f' }));
    const read = (await plain.get('i-spec'))!;
    interleaveOnce(db, async () => {
      const fresh = (await plain.get('i-spec'))!;
      const status = { ...fresh.proxy.status, observedGeneration: 2 };
      expect(await plain.writeStatus('i-spec', status, fresh.version)).toBe('written');
    });
    const spec = managedSpec({ machineType: 'e2-medium' });
    expect(await store.replaceSpec('i-spec', spec, read.version)).toBe('written');
    expect((await plain.get('i-spec'))!.proxy).toMatchObject({
      generation: 2,
      spec: { machineType: 'e2-medium' },
      status: { observedGeneration: 2 },
    });
  });

  it('a status write with a spec edited on top of it: written', async () => {
    await plain.create(aProxy({ name: 'i-status', uid: '1c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f' }));
    const read = (await plain.get('i-status'))!;
    interleaveOnce(db, async () => {
      const fresh = (await plain.get('i-status'))!;
      const spec = managedSpec({ machineType: 'e2-standard-2' });
      expect(await plain.replaceSpec('i-status', spec, fresh.version)).toBe('written');
    });
    const status = { ...read.proxy.status, ip: '10.0.0.7' };
    expect(await store.writeStatus('i-status', status, read.version)).toBe('written');
    expect((await plain.get('i-status'))!.proxy).toMatchObject({
      generation: 2,
      spec: { machineType: 'e2-standard-2' },
      status: { ip: '10.0.0.7' },
    });
  });

  // Another tick reading the moved cursor and committing the next window before the resend: the pass took
  // its own commit for that tick's and published none of its window's transitions.
  it('a passive commit with another tick committed on top of it: committed', async () => {
    const feed = new FirestorePassiveFeedStore(db);
    const other = new FirestorePassiveFeedStore(plainDb);
    const minute = (m: number) => new Date(Date.UTC(2026, 2, 1, 0, m));
    expect(await other.commit([], { through: minute(1), tracked: [] }, null)).toBe('committed');
    const read = (await other.cursor())!;
    interleaveOnce(db, async () => {
      const moved = (await other.cursor())!;
      expect(moved.through).toEqual(minute(2));
      expect(await other.commit([], { through: minute(3), tracked: [] }, moved.token)).toBe('committed');
    });
    const states = [{ state: state('i-passive', 1), base: null }];
    expect(await feed.commit(states, { through: minute(2), tracked: ['i-passive'] }, read.token)).toBe(
      'committed',
    );
    expect((await other.cursor())!.through).toEqual(minute(3));
    expect(okCount(await new FirestoreHealthStore(plainDb).get('i-passive'))).toBe(1);
    // Still a conflict: a commit on a cursor another tick moved, which never landed.
    expect(await feed.commit([], { through: minute(4), tracked: [] }, read.token)).toBe('conflict');
  });
});

describe('the planner lock and an ownership commit sent again after they landed are the pass’s own', () => {
  const c = twoClients();

  it('takes the lock by a first create, once', async () => {
    const pid = testProjectId();
    const resent = new Firestore({ projectId: pid });
    const direct = new Firestore({ projectId: pid });
    const twice = replayCommits(resent);
    try {
      const now = new Date('2026-03-01T00:00:00Z');
      const got = await new FirestoreOwnershipStore(resent).acquireLock(
        'pass-0',
        now,
        new Date(now.getTime() + 60_000),
      );
      expect(got).not.toBeNull();
      expect(twice.replayed).toBe(1);
      expect(await new FirestoreOwnershipStore(direct).read()).toMatchObject({
        token: got,
        lock: { holder: 'pass-0' },
      });
    } finally {
      await Promise.all([resent.terminate(), direct.terminate()]);
      await releaseProject(pid);
    }
  });

  // Landed, then the call failed with another status than a conflict: the pass failed holding a lock
  // nobody owned, and every pass was PlannerBusy until it lapsed.
  it.each<[string, number]>([
    ['DEADLINE_EXCEEDED', 4],
    ['UNAVAILABLE', 14],
  ])('takes the lock whose write landed before its call failed (%s), create or update', async (_n, code) => {
    const pid = testProjectId();
    const flaky = new Firestore({ projectId: pid });
    try {
      const store = new FirestoreOwnershipStore(flaky);
      const now = new Date('2026-03-01T00:00:00Z');
      const until = new Date(now.getTime() + 60_000);
      failNextCommitAfterLanding(flaky, code);
      const created = await store.acquireLock('pass-a', now, until);
      expect(created).not.toBeNull();
      expect(await store.read()).toMatchObject({ token: created, lock: { holder: 'pass-a' } });
      // The next pass, after that lock lapsed: an update of the state.
      const later = new Date(until.getTime() + 1);
      failNextCommitAfterLanding(flaky, code);
      const updated = await store.acquireLock('pass-b', later, new Date(later.getTime() + 60_000));
      expect(updated).not.toBeNull();
      expect(await store.read()).toMatchObject({ token: updated, lock: { holder: 'pass-b' } });
    } finally {
      await flaky.terminate();
      await releaseProject(pid);
    }
  });

  it.each<[string, number]>([
    ['DEADLINE_EXCEEDED', 4],
    ['UNAVAILABLE', 14],
  ])(
    'an ownership commit that landed before its call failed (%s) is the pass’s: its version frees the lock',
    async (_n, code) => {
      const pid = testProjectId();
      const flaky = new Firestore({ projectId: pid });
      try {
        const store = new FirestoreOwnershipStore(flaky);
        const now = new Date('2026-03-01T00:00:00Z');
        const lock = await store.acquireLock('pass-a', now, new Date(now.getTime() + 30_000));
        failNextCommitAfterLanding(flaky, code);
        const change = { proxy: 'p-1', next: { proxy: 'p-1', owner: 'gw-1', since: 1, drainEpoch: null } };
        const token = await store.commit([{ ...change, kind: 'assigned' }], 1, lock!, now);
        const state = await store.read();
        expect(state).toMatchObject({ epoch: 1, token, lock: { holder: 'pass-a' } });
        expect(state.records.get('p-1')).toEqual(change.next);
        // The release on the commit's version frees the planner at once, not after the lock's lifetime.
        await store.releaseLock('pass-a', token);
        expect((await store.read()).lock).toBeNull();
        // A commit that did not land still fails: the client's own failure, not a landed one.
        const next = await store.acquireLock('pass-b', now, new Date(now.getTime() + 30_000));
        const client = flaky as unknown as {
          request: (method: string, ...rest: unknown[]) => Promise<unknown>;
        };
        const send = client.request.bind(flaky);
        client.request = async (method, ...rest) => {
          if (method === 'commit') throw Object.assign(new Error('unavailable'), { code: 14 });
          return send(method, ...rest);
        };
        await expect(store.commit([], 2, next!, now)).rejects.toMatchObject({ kind: 'unavailable' });
        client.request = send;
        expect((await store.read()).epoch).toBe(1);
      } finally {
        await flaky.terminate();
        await releaseProject(pid);
      }
    },
  );

  it('commits ownership and takes the lock, each once', async () => {
    const store = new FirestoreOwnershipStore(c.db);
    const plain = new FirestoreOwnershipStore(c.plainDb);
    const now = new Date('2026-03-01T00:00:00Z');
    const until = new Date('2026-03-01T00:02:00Z');
    // The lock taken without a resend: the commit below is what this part shows.
    const first = await plain.acquireLock('pass-1', now, until);
    expect(first).not.toBeNull();
    const token = await store.commit(
      [
        {
          proxy: 'p-1',
          next: { proxy: 'p-1', owner: 'gw-1', since: 1, drainEpoch: null },
          kind: 'drain_cancelled',
        },
      ],
      1,
      first!,
      now,
    );
    expect(c.sent.replayed).toBe(1);
    const state = await plain.read();
    expect(state).toMatchObject({ epoch: 1, token });
    expect(state.records.get('p-1')).toEqual({ proxy: 'p-1', owner: 'gw-1', since: 1, drainEpoch: null });
    await store.releaseLock('pass-1', token);
    expect((await plain.read()).lock).toBeNull();
    // The lock taken with a resend, by the next pass (an update: the document exists) …
    const later = new Date('2026-03-01T00:03:00Z');
    const second = await store.acquireLock('pass-2', later, new Date('2026-03-01T00:05:00Z'));
    expect(second).not.toBeNull();
    expect(c.sent.replayed).toBe(3); // and the release between
    expect(await plain.read()).toMatchObject({ token: second, lock: { holder: 'pass-2' } });
    // Held by pass-2: another holder still gets nothing.
    expect(await store.acquireLock('pass-3', later, new Date('2026-03-01T00:06:00Z'))).toBeNull();
    // A commit on a token another writer moved is still a conflict — also the resend of a commit whose
    // pass lost the lock meanwhile: a lock taken since drops the last commit's id.
    await expect(store.commit([], 2, token, later)).rejects.toMatchObject({ kind: 'conflict' });
    expect((await c.plainDb.collection('ownership').doc('state').get()).get('commitId')).toBeUndefined();
  });
});
