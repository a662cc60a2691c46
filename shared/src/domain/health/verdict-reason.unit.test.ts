import { describe, expect, it } from 'vitest';
import type { PassiveTrack } from './passive-track.js';
import { healthVerdictOf, initialHealth, type ProxyHealthState } from './proxy-health.js';
import type { TrackState, Verdict } from './verdict.js';
import { healthReason, proxyVerdict } from './verdict-reason.js';

const track = (verdict: Verdict | null): TrackState => ({ verdict, consecutiveOk: 0, consecutiveFail: 0 });
const passive = (verdict: Verdict): PassiveTrack => ({ track: track(verdict), lastSignalAt: new Date(0) });

describe('proxyVerdict: worst of the active tiers and PASSIVE', () => {
  it.each<[string, Verdict | null, Verdict | null, Verdict | null, Verdict | null]>([
    ['active only', 'AVAILABLE', 'AVAILABLE', null, 'AVAILABLE'],
    ['passive SUSPECT over AVAILABLE', 'AVAILABLE', 'AVAILABLE', 'SUSPECT', 'SUSPECT'],
    ['passive UNHEALTHY over a passing probe', 'AVAILABLE', 'AVAILABLE', 'UNHEALTHY', 'UNHEALTHY'],
    ['active UNHEALTHY over passive SUSPECT', 'UNHEALTHY', 'AVAILABLE', 'SUSPECT', 'UNHEALTHY'],
    ['active SUSPECT over passive AVAILABLE', 'AVAILABLE', 'SUSPECT', 'AVAILABLE', 'SUSPECT'],
    ['no active verdict yet: passive alone makes none', null, null, 'UNHEALTHY', null],
    ['a missing EGRESS verdict: none', 'AVAILABLE', null, 'UNHEALTHY', null],
  ])('%s', (_name, basic, egress, pass, expected) => {
    expect(proxyVerdict({ BASIC: track(basic), EGRESS: track(egress) }, pass ? passive(pass) : null)).toBe(
      expected,
    );
  });
});

function state(basic: Verdict, pass: Verdict | null, egressProblem: string | null = null): ProxyHealthState {
  const tracks = { BASIC: track(basic), EGRESS: track(egressProblem ? 'UNHEALTHY' : 'AVAILABLE') };
  const p = pass ? passive(pass) : null;
  return {
    ...initialHealth('p1', 'i', null, { successThreshold: 2, failureThreshold: 2 }),
    tracks,
    passive: p,
    verdict: proxyVerdict(tracks, p),
    egressProblem,
  };
}

describe('healthReason: the condition reason in status', () => {
  it.each<[string, ProxyHealthState, string, boolean]>([
    ['healthy', state('AVAILABLE', null), 'ProbeSucceeded', true],
    ['probe failing', state('UNHEALTHY', null), 'ProbeFailed', false],
    [
      'probe failing and gateways too: the probe explains first',
      state('UNHEALTHY', 'UNHEALTHY'),
      'ProbeFailed',
      false,
    ],
    ['egress leak', state('AVAILABLE', null, 'forwarded_header_leak'), 'EgressCheckFailed', false],
    ['gateways failing a passing proxy', state('AVAILABLE', 'UNHEALTHY'), 'PassiveFailures', false],
    ['gateways reporting some failures', state('AVAILABLE', 'SUSPECT'), 'PassiveSuspect', true],
    ['probe suspect', state('SUSPECT', null), 'ProbeSuspect', true],
    ['probe suspect and gateways suspect', state('SUSPECT', 'SUSPECT'), 'ProbeSuspect', true],
  ])('%s → %s', (_name, s, reason, healthy) => {
    expect(healthReason(s)?.reason).toBe(reason);
    expect(healthVerdictOf(s)).toMatchObject({ reason, healthy });
  });

  it('a stored verdict without tracks (an older document) still has the probe reason', () => {
    const bare = { ...state('AVAILABLE', null), tracks: {}, verdict: 'UNHEALTHY' as const };
    expect(healthReason(bare)?.reason).toBe('ProbeFailed');
  });

  it('no verdict: nothing to fold', () => {
    expect(
      healthReason(initialHealth('p1', 'i', null, { successThreshold: 2, failureThreshold: 2 })),
    ).toBeNull();
  });
});
