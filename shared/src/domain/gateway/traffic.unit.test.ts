import { describe, expect, it } from 'vitest';
import {
  MAX_NO_UPSTREAM_ROUTES,
  noOutcomes,
  OUTCOME_CLASSES,
  type OutcomeClass,
  outcomeClass,
  type RequestCount,
  tallyTraffic,
  trafficDelta,
} from './traffic.js';

const count = (outcome: string, n: number, route = 'r'): RequestCount => ({ route, outcome, n });
const outcomes = (given: Partial<Record<OutcomeClass, number>>) => ({ ...noOutcomes(), ...given });

describe('outcomeClass: the one map from outcome codes to the classes of the gateway.traffic line', () => {
  it.each([
    ['ok', 'ok'],
    ['no_upstream', 'noUpstream'],
    ['no_route', 'noRoute'],
    ['no_snapshot', 'notAccepting'],
    ['snapshot_stale', 'notAccepting'],
    ['shutting_down', 'notAccepting'],
    ['not_accepting', 'notAccepting'],
    ['upstream_withdrawn', 'notAccepting'],
    ['proxy_auth_required', 'authRequired'],
    ['unauthorized', 'authRequired'],
    ['ssrf_refused', 'ssrfRefused'],
    ['bad_request', 'clientError'],
    ['header_too_large', 'clientError'],
    ['client_closed', 'clientClosed'],
    ['upstream_dial_failed', 'upstreamFailed'],
    ['upstream_auth_failed', 'upstreamFailed'],
    ['upstream_timeout', 'upstreamFailed'],
    ['target_unresolvable', 'targetFailed'],
    ['fetch_timeout', 'targetFailed'],
    // Anything else — a code added later, or a name that is not a code at all — is counted, as `other`.
    ['internal', 'other'],
    ['some_new_code', 'other'],
    ['constructor', 'other'],
    ['', 'other'],
  ])('%s → %s', (code, cls) => {
    expect(outcomeClass(code)).toBe(cls);
  });
});

describe('tallyTraffic', () => {
  it('sums the per-route, per-code counts into classes and no_upstream answers by route', () => {
    const t = tallyTraffic(
      [
        count('ok', 5, 'a'),
        count('ok', 2, 'b'),
        count('no_upstream', 3, 'a'),
        count('no_upstream', 1, 'b'),
        count('proxy_auth_required', 4, '-'),
        count('strange', 1),
      ],
      7,
      2,
    );
    expect(t.requests).toBe(16);
    expect(t.outcomes).toEqual(outcomes({ ok: 7, noUpstream: 4, authRequired: 4, other: 1 }));
    expect([...t.noUpstreamByRoute]).toEqual([
      ['a', 3],
      ['b', 1],
    ]);
    expect([t.outcomeQueueDrops, t.suspectFallbacks]).toEqual([7, 2]);
    // Every class is in the object, so the line always has the same fields.
    expect(Object.keys(tallyTraffic([], 0, 0).outcomes)).toEqual([...OUTCOME_CLASSES]);
  });
});

describe('trafficDelta: what the line reports', () => {
  it('the first line after start reports everything since start (all counts began at zero)', () => {
    const now = tallyTraffic([count('ok', 3), count('no_upstream', 1, 'x')], 2, 1);
    expect(trafficDelta(null, now)).toEqual({
      requests: 4,
      outcomes: outcomes({ ok: 3, noUpstream: 1 }),
      noUpstreamRoutes: { x: 1 },
      outcomeQueueDrops: 2,
      suspectFallbacks: 1,
    });
  });

  it('later lines report what moved since the line before, and zeros when nothing did', () => {
    const first = tallyTraffic([count('ok', 3), count('no_upstream', 1, 'x')], 2, 1);
    const second = tallyTraffic(
      [
        count('ok', 10),
        count('no_upstream', 1, 'x'),
        count('no_upstream', 4, 'y'),
        count('target_failed', 2),
      ],
      5,
      1,
    );
    expect(trafficDelta(first, second)).toEqual({
      requests: 13,
      outcomes: outcomes({ ok: 7, noUpstream: 4, targetFailed: 2 }),
      // x did not move: only y is named.
      noUpstreamRoutes: { y: 4 },
      outcomeQueueDrops: 3,
      suspectFallbacks: 0,
    });
    expect(trafficDelta(second, second)).toEqual({
      requests: 0,
      outcomes: noOutcomes(),
      noUpstreamRoutes: {},
      outcomeQueueDrops: 0,
      suspectFallbacks: 0,
    });
  });

  it('is never negative: a count below its last reading (a restart, a reset) reads as zero', () => {
    const before = tallyTraffic([count('ok', 50), count('no_upstream', 9, 'x')], 40, 30);
    const after = tallyTraffic([count('ok', 2)], 1, 0);
    const d = trafficDelta(before, after);
    expect(d.requests).toBe(0);
    expect(d.outcomes).toEqual(noOutcomes());
    expect(d.noUpstreamRoutes).toEqual({});
    expect([d.outcomeQueueDrops, d.suspectFallbacks]).toEqual([0, 0]);
    for (const v of [d.requests, ...Object.values(d.outcomes)]) expect(v).toBeGreaterThanOrEqual(0);
  });

  it(`names at most ${MAX_NO_UPSTREAM_ROUTES} routes, the ones with the most no_upstream answers`, () => {
    const routes = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const now = tallyTraffic(
      routes.map((r, i) => count('no_upstream', i + 1, r)),
      0,
      0,
    );
    expect(trafficDelta(null, now).noUpstreamRoutes).toEqual({ g: 7, f: 6, e: 5, d: 4, c: 3 });
  });
});

describe('retired counts (routes the routing no longer has)', () => {
  it('count in the totals, under no route', () => {
    const t = tallyTraffic(
      [count('no_upstream', 2, 'live'), { route: '', outcome: 'no_upstream', n: 5, retired: true }],
      0,
      0,
    );
    expect(t.requests).toBe(7);
    expect(t.outcomes.noUpstream).toBe(7);
    expect([...t.noUpstreamByRoute]).toEqual([['live', 2]]);
  });
});
