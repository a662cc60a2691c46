// A health commit that lands while its call fails with another status than a conflict — DEADLINE_EXCEEDED
// (4), or UNAVAILABLE (14) once the client's retries are spent — is the pass's own write, known by its
// mark: thrown, the run recorded the window as not stored and the next run probed it again, reducing a
// second result into states that already held the first (docs/health.md § When a proxy is probed). So is a
// proxy write, known by its uid, its spec or status write id, or its deletion time. On the Firestore
// emulator, with the real client; the failing answers are test/support/replayed-commit-firestore.ts.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeDecisions } from '../../functions/probe/src/health-writes.js';
import { FirestoreHealthStore } from '../../shared/src/adapters/firestore/health-store.js';
import { FirestorePassiveFeedStore } from '../../shared/src/adapters/firestore/passive-feed-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import type { ProxyHealthState } from '../../shared/src/domain/health/proxy-health.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { failCommitsAfterLanding } from '../support/replayed-commit-firestore.js';

const DEADLINE_EXCEEDED = 4;
const UNAVAILABLE = 14;
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

describe('a health commit that landed before its call failed reads as written', () => {
  const projectId = testProjectId();
  const clients: Firestore[] = [];
  const client = () => {
    const db = new Firestore({ projectId });
    clients.push(db);
    return db;
  };
  let plain: FirestoreHealthStore;
  beforeAll(() => {
    plain = new FirestoreHealthStore(client());
  });
  afterAll(async () => {
    await Promise.all(clients.map((db) => db.terminate()));
    await releaseProject(projectId);
  });

  it('one commit of several writes, failed with DEADLINE_EXCEEDED after it landed: all written, once', async () => {
    const db = client();
    const failed = failCommitsAfterLanding(db, DEADLINE_EXCEEDED);
    const store = new FirestoreHealthStore(db);
    await plain.writeMany([{ state: state('l-b', 1), base: null }]);
    const { version } = (await plain.getMany(['l-b'])).get('l-b')!;
    expect(
      await store.writeMany([
        { state: state('l-a', 1), base: null },
        { state: state('l-b', 2), base: version },
      ]),
    ).toEqual(['written', 'written']);
    expect(failed.failed).toBe(1);
    expect(okCount(await plain.get('l-a'))).toBe(1);
    expect(okCount(await plain.get('l-b'))).toBe(2);
  });

  it('writes sent one by one after a real race: the landed ones written, the lost one a conflict', async () => {
    await plain.writeMany([{ state: state('l-race', 1), base: null }]);
    const stale = (await plain.getMany(['l-race'])).get('l-race')!.version;
    await plain.writeMany([{ state: state('l-race', 5), base: stale }]); // another pass wrote it since
    const db = client();
    const failed = failCommitsAfterLanding(db, UNAVAILABLE);
    const results = await new FirestoreHealthStore(db).writeMany([
      { state: state('l-one', 1), base: null },
      { state: state('l-race', 2), base: stale },
    ]);
    // The batch lost on l-race and landed nothing (no failure after landing); each single then: l-one
    // landed and its call failed, l-race lost again.
    expect(results).toEqual(['written', 'conflict']);
    expect(failed.failed).toBe(1);
    expect(okCount(await plain.get('l-race'))).toBe(5);
  });

  it('a commit that failed without landing still throws', async () => {
    const db = client();
    const unreachable = db as unknown as {
      request: (method: string, ...rest: unknown[]) => Promise<unknown>;
    };
    const send = unreachable.request.bind(db);
    unreachable.request = async (method, ...rest) => {
      if (method === 'commit') throw Object.assign(new Error('unavailable'), { code: UNAVAILABLE });
      return send(method, ...rest);
    };
    await expect(
      new FirestoreHealthStore(db).writeMany([{ state: state('l-none', 1), base: null }]),
    ).rejects.toMatchObject({ code: UNAVAILABLE });
    expect(await plain.get('l-none')).toBeNull();
  });

  it('the active pass keeps its decision: nothing for the run to record as not stored', async () => {
    const db = client();
    failCommitsAfterLanding(db, DEADLINE_EXCEEDED);
    const warnings: string[] = [];
    const out = await storeDecisions(
      { health: new FirestoreHealthStore(db), log: { info: () => {}, warn: (m) => warnings.push(m) } },
      [
        {
          decision: { next: state('l-pass', 1), write: true, publish: 'health-transition' },
          base: null,
          redecide: () => {
            throw new Error('decided again on its own write');
          },
        },
      ],
    );
    expect(out).toMatchObject({ written: 1, decisions: [{ publish: 'health-transition' }] });
    expect(warnings).toEqual([]);
  });

  it('a passive commit (health states and cursor) that landed before its call failed reads as committed', async () => {
    const db = client();
    failCommitsAfterLanding(db, DEADLINE_EXCEEDED);
    const through = new Date('2026-03-01T00:01:00Z');
    expect(
      await new FirestorePassiveFeedStore(db).commit(
        [{ state: state('l-passive', 1), base: null }],
        { through, tracked: ['l-passive'] },
        null,
      ),
    ).toBe('committed');
    expect(await new FirestorePassiveFeedStore(client()).cursor()).toMatchObject({ through });
    expect(okCount(await plain.get('l-passive'))).toBe(1);
  });
});

// A proxy write that landed reported 'unavailable': the API answered 503 and published no reconcile request,
// and a retried POST got 409 for the caller's own proxy, a retried PUT with If-Match 412 for its own edit.
describe('a proxy write that landed before its call failed reads as written', () => {
  const projectId = testProjectId();
  let db: Firestore;
  let plainDb: Firestore;
  let plain: FirestoreProxyStore;
  beforeAll(() => {
    db = new Firestore({ projectId });
    plainDb = new Firestore({ projectId });
    plain = new FirestoreProxyStore(plainDb);
  });
  afterAll(async () => {
    await Promise.all([db.terminate(), plainDb.terminate()]);
    await releaseProject(projectId);
  });

  it('a create, a spec edit, a status write and deletion requests: each written, once', async () => {
    const failed = failCommitsAfterLanding(db, DEADLINE_EXCEEDED);
    const store = new FirestoreProxyStore(db);
    await store.create(aProxy({ name: 'l-proxy', uid: '2c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f' }));
    let read = (await plain.get('l-proxy'))!;
    expect(await store.replaceSpec('l-proxy', managedSpec({ machineType: 'e2-medium' }), read.version)).toBe(
      'written',
    );
    read = (await plain.get('l-proxy'))!;
    expect(read.proxy).toMatchObject({ generation: 2, spec: { machineType: 'e2-medium' } });
    const status = { ...read.proxy.status, ip: '10.0.0.5', observedGeneration: 2 };
    expect(await store.writeStatus('l-proxy', status, read.version)).toBe('written');
    read = (await plain.get('l-proxy'))!;
    expect(read.proxy.status).toMatchObject({ ip: '10.0.0.5', observedGeneration: 2 });
    const at = new Date('2026-03-01T00:00:00.123Z');
    expect(await store.requestDeletion('l-proxy', at, read.version)).toBe('written');
    expect((await plain.get('l-proxy'))!.proxy.deletionRequestedAt).toEqual(at);
    await store.create(aProxy({ name: 'l-unversioned', uid: '3c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f' }));
    expect(await store.requestDeletion('l-unversioned', at)).toBe('written');
    expect((await plain.get('l-unversioned'))!.proxy.deletionRequestedAt).toEqual(at);
    expect(failed.failed).toBe(6);
  });

  it('a write that did not land still fails: unavailable, or already_exists for another create', async () => {
    const unreachable = new Firestore({ projectId });
    try {
      const client = unreachable as unknown as {
        request: (method: string, ...rest: unknown[]) => Promise<unknown>;
      };
      const send = client.request.bind(unreachable);
      client.request = async (method, ...rest) => {
        if (method === 'commit') throw Object.assign(new Error('unavailable'), { code: UNAVAILABLE });
        return send(method, ...rest);
      };
      const store = new FirestoreProxyStore(unreachable);
      await expect(store.create(aProxy({ name: 'l-none' }))).rejects.toMatchObject({ kind: 'unavailable' });
      expect(await plain.get('l-none')).toBeNull();
      await plain.create(aProxy({ name: 'l-kept', uid: '4c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f' }));
      const read = (await plain.get('l-kept'))!;
      const status = { ...read.proxy.status, ip: '10.0.0.9' };
      await expect(store.writeStatus('l-kept', status, read.version)).rejects.toMatchObject({
        kind: 'unavailable',
      });
      expect((await plain.get('l-kept'))!.version).toBe(read.version);
    } finally {
      await unreachable.terminate();
    }
    const landing = new Firestore({ projectId });
    try {
      failCommitsAfterLanding(landing, DEADLINE_EXCEEDED);
      await expect(
        new FirestoreProxyStore(landing).create(
          aProxy({ name: 'l-kept', uid: '5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f' }),
        ),
      ).rejects.toMatchObject({ kind: 'already_exists' });
    } finally {
      await landing.terminate();
    }
  });
});
