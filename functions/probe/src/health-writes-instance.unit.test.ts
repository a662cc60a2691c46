// An older overlapping pass that lost its write to a newer one about a replacement instance: its result is
// about the instance it listed, and must not restart the state for that one over the replacement's.
import { describe, expect, it } from 'vitest';
import { decideHealth, type ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import { inMemoryHealthStore } from '../../../shared/src/testing/in-memory-health-store.js';
import { storeDecisions } from './health-writes.js';

const hc = { successThreshold: 1, failureThreshold: 3 };
const K1 = 'zones/z/instances/pp-u@2026-01-01T00:00:00.000Z';
const K2 = 'zones/z/instances/pp-u@2026-01-01T00:00:40.000Z';
const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
const basic = (ok: boolean) => [
  { track: 'BASIC' as const, ok, latencyMs: 5, ...(ok ? {} : { problem: 'timeout' }) },
];

describe('storeDecisions: a lost write whose fresh state is another instance’s', () => {
  it('drops the decision (logged at INFO) instead of deciding it again over the replacement', async () => {
    const health = new Map<string, ProxyHealthState>();
    const store = inMemoryHealthStore(health);
    // The older pass R1 read the state of the old instance K1.
    const s1 = decideHealth(null, 'p', K1, null, basic(true), ['BASIC'], hc, at(10)).next;
    await store.writeMany([{ state: s1, base: null }]);
    const read1 = (await store.getMany(['p'])).get('p')!;
    // The next tick's pass R2, listing the replacement K2, stores the new instance's state first.
    const s2 = decideHealth(read1.state, 'p', K2, null, basic(true), ['BASIC'], hc, at(50)).next;
    await store.writeMany([{ state: s2, base: read1.version }]);
    // R1, still on its K1 listing, dialled the old (gone) address: a failure, decided on what it read.
    const redecide = (s: ProxyHealthState | null) =>
      decideHealth(s, 'p', K1, null, basic(false), ['BASIC'], hc, at(60));
    const infos: Array<[string, Record<string, unknown>]> = [];
    const warns: string[] = [];
    const stored = await storeDecisions(
      { health: store, log: { info: (m, f) => void infos.push([m, f]), warn: (m) => void warns.push(m) } },
      [{ decision: redecide(read1.state), base: read1.version, redecide }],
    );
    expect(health.get('p')).toEqual(s2);
    // Neither written nor holding: no transition of K1's is published.
    expect(stored).toEqual({ decisions: [], written: 0 });
    expect(infos).toEqual([
      [
        'health decisions dropped: another instance is stored for the proxy now',
        { proxies: ['p'], count: 1 },
      ],
    ]);
    expect(warns).toEqual([]);
  });

  it('decides again on the fresh state of the same instance', async () => {
    const health = new Map<string, ProxyHealthState>();
    const store = inMemoryHealthStore(health);
    const s1 = decideHealth(null, 'p', K1, null, basic(true), ['BASIC'], hc, at(10)).next;
    await store.writeMany([{ state: s1, base: null }]);
    const read1 = (await store.getMany(['p'])).get('p')!;
    const s2 = decideHealth(read1.state, 'p', K1, null, basic(false), ['BASIC'], hc, at(40)).next;
    await store.writeMany([{ state: s2, base: read1.version }]);
    const redecide = (s: ProxyHealthState | null) =>
      decideHealth(s, 'p', K1, null, basic(false), ['BASIC'], hc, at(60));
    const stored = await storeDecisions({ health: store, log: { info: () => {}, warn: () => {} } }, [
      { decision: redecide(read1.state), base: read1.version, redecide },
    ]);
    expect(stored.written).toBe(1);
    // Both passes' failures counted.
    expect(health.get('p')?.tracks.BASIC?.consecutiveFail).toBe(2);
  });
});
