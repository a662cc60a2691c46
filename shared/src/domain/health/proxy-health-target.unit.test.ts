// decideHealth with TARGET tracks (contract §6, docs/health.md § TARGET): per route, never the proxy's
// verdict; dropped once they no longer apply; a change of the unreachable routes is written and published.
import { describe, expect, it } from 'vitest';
import {
  decideHealth,
  type HealthDecision,
  healthVerdictOf,
  type ProxyHealthState,
  type TrackResult,
} from './proxy-health.js';
import { type TrackKey, trackKey } from './verdict.js';
import type { ActiveTrack } from './verdict-reason.js';

const t = { successThreshold: 2, failureThreshold: 3 };
const instanceA = 'zones/z/instances/pp-a@2026-01-01T00:00:00.000Z';
const replacement = 'zones/z/instances/pp-a@2026-01-01T00:20:00.000Z';
const t0 = new Date('2026-01-01T00:10:00Z');
const BOTH: ActiveTrack[] = ['BASIC', 'EGRESS'];
const SHOP = trackKey('TARGET', 'shop');
const NEWS = trackKey('TARGET', 'news');
const BOTH_ROUTES: ReadonlySet<TrackKey> = new Set([SHOP, NEWS]);

/** One probe as tiers.ts runs it: BASIC, then EGRESS and each route's check only when BASIC passed. */
const probe = (basic: boolean, routes: Record<string, boolean> = {}): TrackResult[] =>
  basic
    ? [
        { track: 'BASIC', ok: true, latencyMs: 50 },
        { track: 'EGRESS', ok: true, latencyMs: 50 },
        ...Object.entries(routes).map(([r, ok]) => ({ track: trackKey('TARGET', r), ok, latencyMs: 80 })),
      ]
    : [{ track: 'BASIC', ok: false, latencyMs: 5000 }];

/** Runs ticks one minute apart from `start`, returning every decision. */
function ticks(
  start: ProxyHealthState | null,
  probes: TrackResult[][],
  targets: ReadonlySet<TrackKey> | null = BOTH_ROUTES,
  instance = instanceA,
  from = 0,
): HealthDecision[] {
  let state = start;
  return probes.map((r, i) => {
    const at = new Date(t0.getTime() + (from + i) * 61_000);
    const dec = decideHealth(state, 'p1', instance, null, r, BOTH, t, at, undefined, targets);
    state = dec.next;
    return dec;
  });
}
const last = (ds: HealthDecision[]) => ds[ds.length - 1]!;
const rep = <T>(n: number, x: T): T[] => Array.from({ length: n }, () => x);

/** AVAILABLE, latency reported, shop blocked (UNHEALTHY), news reachable: a steady state. */
function blockedShop(): ProxyHealthState {
  return last(ticks(null, rep(4, probe(true, { shop: false, news: true })))).next;
}

describe('decideHealth: TARGET tracks', () => {
  it('a route failing through the proxy turns UNHEALTHY at failureThreshold, published once; the proxy stays AVAILABLE', () => {
    const ds = ticks(null, rep(5, probe(true, { shop: false, news: true })));
    expect(ds.map((d) => d.next.verdict)).toEqual([null, ...rep(4, 'AVAILABLE')]);
    expect(ds.map((d) => d.next.tracks[SHOP]?.verdict)).toEqual([
      null,
      null,
      'UNHEALTHY',
      'UNHEALTHY',
      'UNHEALTHY',
    ]);
    // The first latency report, then AVAILABLE, then shop entering the unreachable routes; then nothing.
    expect(ds.map((d) => d.publish !== null)).toEqual([true, true, true, false, false]);
    expect(healthVerdictOf(ds[2]!.next)).toMatchObject({
      healthy: true,
      reason: 'ProbeSucceeded',
      unreachableRoutes: ['shop'],
    });
    expect(ds[2]!.next.transitionAt).toEqual(new Date(t0.getTime() + 2 * 61_000));
  });

  it('a steady state with TARGET tracks is a fixed point: nothing written, nothing published', () => {
    const ds = ticks(
      blockedShop(),
      rep(5, probe(true, { shop: false, news: true })),
      BOTH_ROUTES,
      instanceA,
      4,
    );
    expect(ds.map((d) => [d.write, d.publish])).toEqual(rep(5, [false, null]));
  });

  it('a blocked route that recovers leaves the unreachable routes at successThreshold, published', () => {
    const ds = ticks(
      blockedShop(),
      rep(3, probe(true, { shop: true, news: true })),
      BOTH_ROUTES,
      instanceA,
      4,
    );
    expect(ds.map((d) => d.next.tracks[SHOP]?.verdict)).toEqual(['UNHEALTHY', 'AVAILABLE', 'AVAILABLE']);
    expect(ds.map((d) => d.publish)).toEqual([null, 'health-transition', null]);
    expect(ds.map((d) => d.write)).toEqual([true, true, false]);
    expect(healthVerdictOf(ds[1]!.next)?.unreachableRoutes).toEqual([]);
  });

  it('a proxy failing BASIC keeps its TARGET tracks as they are; its own verdict alone turns UNHEALTHY', () => {
    const ds = ticks(blockedShop(), rep(3, probe(false)), BOTH_ROUTES, instanceA, 4);
    const state = last(ds).next;
    expect(state.verdict).toBe('UNHEALTHY');
    expect(state.tracks[SHOP]).toEqual(blockedShop().tracks[SHOP]);
    expect(state.tracks[NEWS]).toEqual(blockedShop().tracks[NEWS]);
    expect(healthVerdictOf(state)).toMatchObject({ healthy: false, unreachableRoutes: ['shop'] });
  });

  it.each<[string, ReadonlySet<TrackKey> | null, TrackKey[], boolean]>([
    [
      'the blocked route no longer applies: dropped and published',
      new Set([NEWS]),
      ['BASIC', 'EGRESS', NEWS],
      true,
    ],
    [
      'the reachable route no longer applies: dropped, written, not published',
      new Set([SHOP]),
      ['BASIC', 'EGRESS', SHOP],
      false,
    ],
    [
      'no route applies (no routing stored): every TARGET track dropped',
      new Set(),
      ['BASIC', 'EGRESS'],
      true,
    ],
    [
      'the routing could not be read: every track kept, nothing written',
      null,
      ['BASIC', 'EGRESS', SHOP, NEWS],
      false,
    ],
  ])('%s', (_name, targets, keys, published) => {
    const results = probe(
      true,
      Object.fromEntries([...(targets ?? [])].map((k) => [k.slice(7), k === NEWS])),
    );
    const [d] = ticks(blockedShop(), [results], targets, instanceA, 4);
    expect(Object.keys(d!.next.tracks).sort()).toEqual([...keys].sort());
    expect(d!.publish !== null).toBe(published);
    expect(d!.write).toBe(targets !== null);
    expect(d!.next.verdict).toBe('AVAILABLE');
  });

  it('a track dropped while BASIC fails (route removed while the proxy is down) is dropped too', () => {
    const [d] = ticks(blockedShop(), [probe(false)], new Set([NEWS]), instanceA, 4);
    expect(d!.next.tracks[SHOP]).toBeUndefined();
    expect(d!.next.tracks[NEWS]).toBeDefined();
  });

  it('a replaced instance starts without the old TARGET tracks (fresh counters, no carried exclusion)', () => {
    const [d] = ticks(blockedShop(), [probe(true, { shop: false, news: true })], BOTH_ROUTES, replacement, 4);
    expect(d!.next.instance).toBe(replacement);
    expect(d!.next.tracks[SHOP]).toEqual({ verdict: null, consecutiveOk: 0, consecutiveFail: 1 });
    expect(healthVerdictOf(d!.next)).toBeNull();
  });
});
