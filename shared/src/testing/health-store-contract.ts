// The HealthStore port's behaviour, written once and run against every implementation (the in-memory fake
// and the Firestore adapter on the emulator), so that the probe passes' unit tests on the fake mean
// something: a state is read with its version, and written only on top of exactly that version — or, for a
// proxy without one, only if nobody created it meanwhile. A write that lost reports a conflict and changes
// nothing; the others in the same call are written all the same.
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { ProxyHealthState } from '../domain/health/proxy-health.js';
import type { HealthStore } from '../ports/health-store.js';

export interface HealthContractSubject {
  store: HealthStore;
  /** Empties the store between tests. */
  reset(): Promise<void>;
  close?(): Promise<void>;
}

const at = new Date('2026-03-01T00:00:00Z');

export const aHealthState = (proxy: string, over: Partial<ProxyHealthState> = {}): ProxyHealthState => ({
  proxy,
  instance: 'zones/z/instances/pp-a@2026-03-01T00:00:00.000Z',
  tracks: {
    BASIC: { verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 },
    'TARGET:shop': { verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: 3 },
  },
  verdict: 'AVAILABLE',
  latency: { reportedMs: 42, reportedAt: at },
  egressProblem: null,
  transitionAt: at,
  latencyHistory: [{ ms: 42, at }],
  passive: null,
  ...over,
});

const failing = (s: ProxyHealthState, fails: number): ProxyHealthState => ({
  ...s,
  tracks: { ...s.tracks, BASIC: { verdict: 'AVAILABLE', consecutiveOk: 0, consecutiveFail: fails } },
});

export function healthStoreContract(label: string, subject: () => Promise<HealthContractSubject>): void {
  describe(`HealthStore contract: ${label}`, () => {
    let s: HealthContractSubject;
    let store: HealthStore;
    beforeEach(async () => {
      s ??= await subject();
      await s.reset();
      store = s.store;
    });
    afterAll(async () => {
      await s?.close?.();
    });

    const read = async (name: string) => (await store.getMany([name])).get(name);

    it('a proxy without state reads as absent; a first write creates it, and it reads back with a version', async () => {
      expect(await store.getMany(['h1'])).toEqual(new Map());
      expect(await store.get('h1')).toBeNull();
      const s1 = aHealthState('h1');
      expect(await store.writeMany([{ state: s1, base: null }])).toEqual(['written']);
      const got = await read('h1');
      expect(got?.state).toEqual(s1);
      expect(typeof got?.version).toBe('string');
      expect(await store.get('h1')).toEqual(s1);
      expect(await store.listNames()).toEqual(['h1']);
    });

    it('the code of a BASIC failure reads back (the Healthy message names it); without one, none', async () => {
      const down = aHealthState('h2', {
        verdict: 'UNHEALTHY',
        tracks: { BASIC: { verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: 3 } },
        basicProblem: 'connect_status_403',
      });
      await store.writeMany([{ state: down, base: null }]);
      expect(await store.get('h2')).toEqual(down);
      const { basicProblem: _none, ...up } = down;
      const got = await read('h2');
      await store.writeMany([{ state: { ...up, verdict: 'AVAILABLE' }, base: got!.version }]);
      expect((await store.get('h2'))?.basicProblem).toBeUndefined();
    });

    it('two first writers: the second conflicts and the first one’s state stays', async () => {
      const first = failing(aHealthState('h1'), 1);
      expect(await store.writeMany([{ state: first, base: null }])).toEqual(['written']);
      expect(await store.writeMany([{ state: aHealthState('h1'), base: null }])).toEqual(['conflict']);
      expect((await read('h1'))?.state).toEqual(first);
    });

    it('a write on top of the version read lands and makes a new version; one on top of an older version conflicts', async () => {
      await store.writeMany([{ state: aHealthState('h1'), base: null }]);
      const v1 = (await read('h1'))!.version;
      // Two passes read v1; the first to write wins …
      expect(await store.writeMany([{ state: failing(aHealthState('h1'), 1), base: v1 }])).toEqual([
        'written',
      ]);
      const v2 = (await read('h1'))!.version;
      expect(v2).not.toBe(v1);
      // … and the second, decided on v1, does not overwrite it.
      const stale = { ...aHealthState('h1'), verdict: 'SUSPECT' as const };
      expect(await store.writeMany([{ state: stale, base: v1 }])).toEqual(['conflict']);
      expect((await read('h1'))?.state).toEqual(failing(aHealthState('h1'), 1));
      // Read again, it lands.
      expect(await store.writeMany([{ state: stale, base: v2 }])).toEqual(['written']);
      expect((await read('h1'))?.state).toEqual(stale);
    });

    it('a write on top of the version of a state deleted since conflicts and creates nothing', async () => {
      await store.writeMany([{ state: aHealthState('h1'), base: null }]);
      const v1 = (await read('h1'))!.version;
      await store.deleteMany(['h1']);
      expect(await store.writeMany([{ state: aHealthState('h1'), base: v1 }])).toEqual(['conflict']);
      expect(await read('h1')).toBeUndefined();
    });

    it('one result per write, in order: a conflict on one leaves the others written', async () => {
      await store.writeMany([
        { state: aHealthState('a'), base: null },
        { state: aHealthState('b'), base: null },
      ]);
      const versions = await store.getMany(['a', 'b']);
      await store.writeMany([{ state: failing(aHealthState('b'), 1), base: versions.get('b')!.version }]);
      const results = await store.writeMany([
        { state: failing(aHealthState('a'), 2), base: versions.get('a')!.version },
        { state: failing(aHealthState('b'), 2), base: versions.get('b')!.version },
        { state: aHealthState('c'), base: null },
      ]);
      expect(results).toEqual(['written', 'conflict', 'written']);
      const after = await store.getMany(['a', 'b', 'c']);
      expect(after.get('a')?.state).toEqual(failing(aHealthState('a'), 2));
      expect(after.get('b')?.state).toEqual(failing(aHealthState('b'), 1));
      expect(after.get('c')?.state).toEqual(aHealthState('c'));
    });

    it('a rewrite replaces the state whole: a track it no longer has is gone', async () => {
      await store.writeMany([{ state: aHealthState('h1'), base: null }]);
      const { 'TARGET:shop': _gone, ...rest } = aHealthState('h1').tracks;
      const v1 = (await read('h1'))!.version;
      await store.writeMany([{ state: aHealthState('h1', { tracks: rest }), base: v1 }]);
      expect(Object.keys((await read('h1'))!.state.tracks)).toEqual(['BASIC']);
    });

    it('deleteMany removes the states named, and listNames lists the rest', async () => {
      await store.writeMany(['a', 'b', 'c'].map((n) => ({ state: aHealthState(n), base: null })));
      await store.deleteMany(['a', 'c']);
      expect(await store.listNames()).toEqual(['b']);
    });
  });
}
