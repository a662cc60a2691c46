import { describe, expect, it } from 'vitest';
import { condition } from '../../testing/healthy-conditions.js';
import { aProxy, externalSpec } from '../../testing/proxy-fixtures.js';
import type { Condition, ProxyResource } from '../proxy.js';
import { healthInstanceKey } from './instance-key.js';
import type { ProxyHealthState } from './proxy-health.js';
import { statusLags } from './status-lag.js';
import type { Verdict } from './verdict.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const cond = (type: string, status: Condition['status'], reason: string) =>
  condition(type, status, reason, t0);
const provisioned = cond('Provisioned', 'True', 'Created');
const healthy = cond('Healthy', 'True', 'ProbeSucceeded');
const unhealthy = cond('Healthy', 'False', 'ProbeFailed');
const suspect = cond('Healthy', 'True', 'ProbeSuspect');

const external = (conditions: Condition[], over: Partial<ProxyResource> = {}) =>
  aProxy({ spec: externalSpec(), status: { ip: '203.0.113.7', conditions }, ...over });
const managed = (conditions: Condition[]) =>
  aProxy({ status: { ip: '10.0.0.2', providerId: 'zones/z/instances/pp-a', conditions } });

function stateOf(
  p: ProxyResource,
  verdict: Verdict | null,
  instance = healthInstanceKey(p),
): ProxyHealthState {
  const track = verdict && { verdict, consecutiveOk: 0, consecutiveFail: 0 };
  return {
    proxy: p.name,
    instance,
    tracks: track ? { BASIC: track } : {},
    verdict,
    latency: { reportedMs: null, reportedAt: null },
    egressProblem: null,
    transitionAt: t0,
    passive: null,
  };
}

describe('statusLags', () => {
  it.each<[string, ProxyResource, Verdict | null, boolean]>([
    [
      'external: stored UNHEALTHY, status still Healthy=True',
      external([provisioned, healthy]),
      'UNHEALTHY',
      true,
    ],
    [
      'external: stored AVAILABLE, status still Healthy=False',
      external([provisioned, unhealthy]),
      'AVAILABLE',
      true,
    ],
    ['external: a verdict, status has no Healthy yet', external([provisioned]), 'AVAILABLE', true],
    [
      'managed: stored UNHEALTHY, status still Healthy=True',
      managed([provisioned, healthy]),
      'UNHEALTHY',
      true,
    ],
    ['status agrees (healthy)', external([provisioned, healthy]), 'AVAILABLE', false],
    ['status agrees (unhealthy)', external([provisioned, unhealthy]), 'UNHEALTHY', false],
    ['stored SUSPECT, status still ProbeSucceeded', external([provisioned, healthy]), 'SUSPECT', true],
    ['stored AVAILABLE, status still ProbeSuspect', external([provisioned, suspect]), 'AVAILABLE', true],
    ['status agrees (SUSPECT)', external([provisioned, suspect]), 'SUSPECT', false],
    ['no verdict yet: nothing for reconcile to fold', external([provisioned, healthy]), null, false],
    ['managed proxy not provisioned: reconcile folds nothing', managed([healthy]), 'UNHEALTHY', false],
    [
      'managed proxy being replaced (Provisioned=False)',
      managed([cond('Provisioned', 'False', 'Replacing'), healthy]),
      'UNHEALTHY',
      false,
    ],
  ])('%s', (_name, p, verdict, lags) => {
    expect(statusLags(stateOf(p, verdict), p)).toBe(lags);
  });

  it('a proxy being deleted is left alone', () => {
    const p = external([provisioned, healthy], { deletionRequestedAt: t0 });
    expect(statusLags(stateOf(p, 'UNHEALTHY'), p)).toBe(false);
  });

  it('a state about another instance (an edited endpoint, a replaced VM) is never pushed into status', () => {
    const p = external([provisioned, healthy]);
    expect(statusLags(stateOf(p, 'UNHEALTHY', '198.51.100.1:8080'), p)).toBe(false);
    const m = managed([provisioned, healthy]);
    expect(statusLags(stateOf(m, 'UNHEALTHY', 'zones/z/instances/pp-a@2025-12-31T00:00:00.000Z'), m)).toBe(
      false,
    );
  });

  // Operator seed §6: a dropped report does not advance the markers, the next probe retries. A latency
  // report's publish lost leaves the state at the new latency, so nothing else would ever publish it for
  // an external proxy whose latency stays put; lease selection ranks on status.latencyMillis.
  it.each<[string, number | null, number | null, boolean]>([
    ['a latency report lost: status shows the older latency', 120, 40, true],
    ['the first latency report lost: status shows none', null, 40, true],
    ['status shows the reported latency', 40, 40, false],
    ['no latency reported either side (a proxy failing from its first probe)', null, null, false],
  ])('latency: %s', (_name, shown, reported, lags) => {
    const p = external([provisioned, healthy]);
    const proxy = { ...p, status: { ...p.status, latencyMillis: shown } };
    const state = stateOf(proxy, 'AVAILABLE');
    state.latency = { reportedMs: reported, reportedAt: reported === null ? null : t0 };
    expect(statusLags(state, proxy)).toBe(lags);
  });

  it('latency: a state about another instance or without a verdict is never pushed, whatever its latency', () => {
    const p = external([provisioned, healthy]);
    const other = stateOf(p, 'AVAILABLE', '198.51.100.1:8080');
    other.latency = { reportedMs: 40, reportedAt: t0 };
    expect(statusLags(other, p)).toBe(false);
    const undecided = stateOf(p, null);
    undecided.latency = { reportedMs: 40, reportedAt: t0 };
    expect(statusLags(undecided, p)).toBe(false);
  });

  it.each<[string, string[] | undefined, 'AVAILABLE' | 'UNHEALTHY' | null, boolean]>([
    ['a route went unreachable, status has none', undefined, 'UNHEALTHY', true],
    ['the route recovered, status still lists it', ['shop'], 'AVAILABLE', true],
    ['status lists the unreachable route', ['shop'], 'UNHEALTHY', false],
    ['nothing unreachable either side', undefined, 'AVAILABLE', false],
  ])('unreachable routes: %s', (_name, shown, shopTrack, lags) => {
    const p = external([provisioned, healthy]);
    const proxy = { ...p, status: { ...p.status, ...(shown ? { unreachableRoutes: shown } : {}) } };
    const state = stateOf(proxy, 'AVAILABLE');
    if (shopTrack) state.tracks['TARGET:shop'] = { verdict: shopTrack, consecutiveOk: 0, consecutiveFail: 0 };
    expect(statusLags(state, proxy)).toBe(lags);
  });
});
