// A commit the Firestore client sends again after its first attempt landed (the answer was lost: the client
// resends a commit on UNAVAILABLE, RESOURCE_EXHAUSTED and ABORTED) fails its own precondition. The probe's
// stores know their own write by the id it stamped (health-store.ts `writeId`), so the pass takes it for
// written — not for a race lost, which would decide again on top of its own result and count one probe
// twice, or drop a committed passive window's transitions. On the Firestore emulator, with the real client;
// the second sending is test/support/replayed-commit-firestore.ts.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeDecisions } from '../../functions/probe/src/health-writes.js';
import { FirestoreHealthStore } from '../../shared/src/adapters/firestore/health-store.js';
import { FirestorePassiveFeedStore } from '../../shared/src/adapters/firestore/passive-feed-store.js';
import type { HealthDecision, ProxyHealthState } from '../../shared/src/domain/health/proxy-health.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { replayCommits } from '../support/replayed-commit-firestore.js';

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
