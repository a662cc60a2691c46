// The HealthStore contract (versioned reads, preconditioned writes) against the in-memory fake and the
// Firestore adapter, plus health/{proxy} documents on the Firestore emulator: TARGET:<route> track keys
// round-trip (the documents are written whole — every field, each map value replaced — so ':' only ever
// appears as a map key, never in an update field path), and a document written before the TARGET tier —
// no TARGET tracks, or no tracks at all — still reads.
import { FieldPath, Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { FirestoreHealthStore } from '../../shared/src/adapters/firestore/health-store.js';
import { healthVerdictOf, type ProxyHealthState } from '../../shared/src/domain/health/proxy-health.js';
import { healthStoreContract } from '../../shared/src/testing/health-store-contract.js';
import { inMemoryHealthStore } from '../../shared/src/testing/in-memory-health-store.js';
import { clearProject, releaseProject, testProjectId } from '../support/emulators.js';

healthStoreContract('in-memory fake', async () => {
  const health = new Map<string, ProxyHealthState>();
  return { store: inMemoryHealthStore(health), reset: async () => health.clear() };
});

healthStoreContract('Firestore adapter (emulator)', async () => {
  const projectId = testProjectId();
  const db = new Firestore({ projectId });
  return {
    store: new FirestoreHealthStore(db),
    reset: () => clearProject(projectId),
    close: async () => {
      await db.terminate();
      await releaseProject(projectId);
    },
  };
});

const at = new Date('2026-03-01T00:00:00Z');
const state = (proxy: string, over: Partial<ProxyHealthState> = {}): ProxyHealthState => ({
  proxy,
  instance: 'zones/z/instances/pp-a@2026-03-01T00:00:00.000Z',
  tracks: {
    BASIC: { verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 },
    'TARGET:shop': { verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: 3 },
    'TARGET:news-eu': { verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 },
  },
  verdict: 'AVAILABLE',
  latency: { reportedMs: 42, reportedAt: at },
  egressProblem: null,
  transitionAt: at,
  latencyHistory: [{ ms: 42, at }],
  passive: null,
  ...over,
});

describe('FirestoreHealthStore and TARGET tracks', () => {
  const projectId = testProjectId();
  let db: Firestore;
  let store: FirestoreHealthStore;
  beforeAll(() => {
    db = new Firestore({ projectId });
    store = new FirestoreHealthStore(db);
  });
  afterAll(async () => {
    await db.terminate();
    await releaseProject(projectId);
  });

  it('TARGET:<route> tracks round-trip through writeMany / get / getMany, and each is its own map key', async () => {
    const s = state('h-target', { activeVerdict: 'AVAILABLE' });
    expect(await store.writeMany([{ state: s, base: null }])).toEqual(['written']);
    expect(await store.get('h-target')).toEqual(s);
    expect((await store.getMany(['h-target'])).get('h-target')?.state).toEqual(s);
    expect(healthVerdictOf((await store.get('h-target'))!)?.unreachableRoutes).toEqual(['shop']);
    const raw = await db.collection(Collections.health).doc('h-target').get();
    expect(Object.keys(raw.get('tracks')).sort()).toEqual(['BASIC', 'TARGET:news-eu', 'TARGET:shop']);
    expect(raw.get(new FieldPath('tracks', 'TARGET:shop'))).toEqual({
      verdict: 'UNHEALTHY',
      consecutiveOk: 0,
      consecutiveFail: 3,
    });
  });

  it('a rewrite without a TARGET track removes it (the document is replaced, not merged)', async () => {
    const s = state('h-drop');
    await store.writeMany([{ state: s, base: null }]);
    const { 'TARGET:shop': _gone, ...rest } = s.tracks;
    const { version } = (await store.getMany(['h-drop'])).get('h-drop')!;
    expect(await store.writeMany([{ state: { ...s, tracks: rest }, base: version }])).toEqual(['written']);
    expect(Object.keys((await store.get('h-drop'))!.tracks).sort()).toEqual(['BASIC', 'TARGET:news-eu']);
    expect(healthVerdictOf((await store.get('h-drop'))!)?.unreachableRoutes).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string[]]>([
    [
      'an older document with BASIC and EGRESS only',
      {
        tracks: {
          BASIC: { verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 },
          EGRESS: { verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 },
        },
      },
      ['BASIC', 'EGRESS'],
    ],
    ['an older document without tracks at all', {}, []],
  ])('%s still reads, with no unreachable route', async (_name, extra, keys) => {
    await db
      .collection(Collections.health)
      .doc('h-old')
      .set({
        proxy: 'h-old',
        instance: 'zones/z/instances/pp-a',
        verdict: 'AVAILABLE',
        egressProblem: null,
        latencyMillis: 30,
        latencyReportedAt: Timestamp.fromDate(at),
        transitionAt: Timestamp.fromDate(at),
        ...extra,
      });
    const read = (await store.get('h-old'))!;
    expect(Object.keys(read.tracks).sort()).toEqual(keys);
    // No active verdict stored: left out, so that keptActiveVerdict derives it from the stored tracks.
    expect(read).not.toHaveProperty('activeVerdict');
    expect(healthVerdictOf(read)).toMatchObject({ healthy: true, unreachableRoutes: [] });
  });

  // A write call past one commit (400 documents) that fails after its first commit landed: the landed
  // ones must not read as unwritten (a probe pass taking the throw for "nothing stored" probed them again
  // and counted their results twice). Nothing landed: the call throws, as before.
  it('answers failed for what a later commit could not write once an earlier one landed', async () => {
    const failingCommit = (n: number): Firestore => {
      let commits = 0;
      return new Proxy(db, {
        get(target, prop) {
          if (prop !== 'batch') {
            const v = Reflect.get(target, prop, target);
            return typeof v === 'function' ? v.bind(target) : v;
          }
          return () => {
            const batch = target.batch();
            const commit = batch.commit.bind(batch);
            batch.commit = async () => {
              if (++commits === n) throw Object.assign(new Error('14 UNAVAILABLE: injected'), { code: 14 });
              return commit();
            };
            return batch;
          };
        },
      });
    };
    const writes = (prefix: string) =>
      Array.from({ length: 401 }, (_, i) => ({ state: state(`${prefix}-${i}`), base: null }));
    const results = await new FirestoreHealthStore(failingCommit(2)).writeMany(writes('h-part'));
    expect(results.slice(0, 400).every((r) => r === 'written')).toBe(true);
    expect(results.slice(400)).toEqual(['failed']);
    expect((await store.getMany(['h-part-0', 'h-part-400'])).has('h-part-0')).toBe(true);
    await expect(new FirestoreHealthStore(failingCommit(1)).writeMany(writes('h-none'))).rejects.toThrow(
      'injected',
    );
  });

  // A console edit "resetting" a track to null made every read throw: each reconcile pass of the proxy
  // (and the probe's) failed, was retried, dead-lettered and published again on every drift slot.
  it('a document edited out of shape in the console reads, what does not fit as not decided', async () => {
    await db
      .collection(Collections.health)
      .doc('h-edited')
      .set({
        proxy: 'h-edited',
        instance: 'zones/z/instances/pp-a',
        verdict: 'GREEN',
        egressProblem: 42,
        tracks: {
          BASIC: null,
          EGRESS: { verdict: 'AVAILABLE', consecutiveOk: 'two', consecutiveFail: -1 },
          'TARGET:shop': 'UNHEALTHY',
        },
        passive: { verdict: 'NOPE', lastSignalAt: Timestamp.fromDate(at) },
      });
    const [one, many] = [await store.get('h-edited'), (await store.getMany(['h-edited'])).get('h-edited')];
    expect(many?.state).toEqual(one);
    expect(one).toMatchObject({
      verdict: null,
      egressProblem: null,
      tracks: { EGRESS: { verdict: 'AVAILABLE', consecutiveOk: 0, consecutiveFail: 0 } },
      passive: { track: { verdict: null, consecutiveOk: 0, consecutiveFail: 0 }, lastSignalAt: at },
    });
    expect(Object.keys(one!.tracks)).toEqual(['EGRESS']);
  });
});
