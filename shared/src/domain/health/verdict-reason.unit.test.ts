import { describe, expect, it } from 'vitest';
import type { PassiveTrack } from './passive-track.js';
import { healthVerdictOf, initialHealth, type ProxyHealthState } from './proxy-health.js';
import type { TrackKey, TrackState, Verdict } from './verdict.js';
import {
  type ActiveTrack,
  activeVerdict,
  healthReason,
  SUSPECT_REASONS,
  withPassive,
} from './verdict-reason.js';

const track = (verdict: Verdict | null): TrackState => ({ verdict, consecutiveOk: 0, consecutiveFail: 0 });
const passive = (verdict: Verdict): PassiveTrack => ({ track: track(verdict), lastSignalAt: new Date(0) });
const BOTH: ActiveTrack[] = ['BASIC', 'EGRESS'];
/** undefined: no such track stored (EGRESS never ran: BASIC never passed, or no echo endpoint). */
const tracksOf = (basic: Verdict | null, egress: Verdict | null | undefined) => {
  const t: Partial<Record<TrackKey, TrackState>> = { BASIC: track(basic) };
  if (egress !== undefined) t.EGRESS = track(egress);
  return t;
};

describe('the verdict: worst of the active tiers and PASSIVE (activeVerdict, withPassive)', () => {
  it.each<[string, Verdict | null, Verdict | null, Verdict | null, Verdict | null]>([
    ['active only', 'AVAILABLE', 'AVAILABLE', null, 'AVAILABLE'],
    ['passive SUSPECT over AVAILABLE', 'AVAILABLE', 'AVAILABLE', 'SUSPECT', 'SUSPECT'],
    ['passive UNHEALTHY over a passing probe', 'AVAILABLE', 'AVAILABLE', 'UNHEALTHY', 'UNHEALTHY'],
    ['active UNHEALTHY over passive SUSPECT', 'UNHEALTHY', 'AVAILABLE', 'SUSPECT', 'UNHEALTHY'],
    ['active SUSPECT over passive AVAILABLE', 'AVAILABLE', 'SUSPECT', 'AVAILABLE', 'SUSPECT'],
    ['no active verdict yet: passive alone makes none', null, null, 'UNHEALTHY', null],
    ['a missing EGRESS verdict: none', 'AVAILABLE', null, 'UNHEALTHY', null],
  ])('%s', (_name, basic, egress, pass, expected) => {
    expect(withPassive(activeVerdict(tracksOf(basic, egress), BOTH), pass ? passive(pass) : null)).toBe(
      expected,
    );
  });
});

describe('activeVerdict: which active tiers must have a verdict', () => {
  it.each<[string, Verdict | null, Verdict | null | undefined, ActiveTrack[], Verdict | null]>([
    ['BASIC failing from the first probe: EGRESS never ran', 'UNHEALTHY', undefined, BOTH, 'UNHEALTHY'],
    ['a known UNHEALTHY EGRESS decides alone too', null, 'UNHEALTHY', BOTH, 'UNHEALTHY'],
    ['BASIC passing, EGRESS not decided yet: none', 'AVAILABLE', undefined, BOTH, null],
    ['BASIC SUSPECT, EGRESS not decided yet: none', 'SUSPECT', null, BOTH, null],
    ['no echo endpoint: BASIC alone decides', 'AVAILABLE', undefined, ['BASIC'], 'AVAILABLE'],
    ['no echo endpoint: BASIC failing', 'UNHEALTHY', undefined, ['BASIC'], 'UNHEALTHY'],
    ['no echo endpoint: a stored EGRESS does not count', 'AVAILABLE', 'UNHEALTHY', ['BASIC'], 'AVAILABLE'],
    ['no echo endpoint, BASIC undecided: none', null, 'AVAILABLE', ['BASIC'], null],
  ])('%s', (_name, basic, egress, active, expected) => {
    expect(activeVerdict(tracksOf(basic, egress), active)).toBe(expected);
  });
});

function state(
  basic: Verdict,
  pass: Verdict | null,
  egressProblem: string | null = null,
  egress: Verdict | undefined = egressProblem ? 'UNHEALTHY' : 'AVAILABLE',
): ProxyHealthState {
  const tracks = tracksOf(basic, egress);
  const p = pass ? passive(pass) : null;
  return {
    ...initialHealth('p1', 'i', null, { successThreshold: 2, failureThreshold: 2 }),
    tracks,
    passive: p,
    verdict: withPassive(activeVerdict(tracks, BOTH), p),
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
    [
      'BASIC failing from the first probe (no EGRESS)',
      state('UNHEALTHY', null, null, undefined),
      'ProbeFailed',
      false,
    ],
    [
      'BASIC failing after an egress leak: the unreachable proxy explains first',
      state('UNHEALTHY', null, 'exit_ip_mismatch'),
      'ProbeFailed',
      false,
    ],
    [
      'gateways failing a proxy checked by BASIC alone',
      state('AVAILABLE', 'UNHEALTHY', null, undefined),
      'PassiveFailures',
      false,
    ],
    ['gateways failing a passing proxy', state('AVAILABLE', 'UNHEALTHY'), 'PassiveFailures', false],
    ['gateways reporting some failures', state('AVAILABLE', 'SUSPECT'), 'PassiveSuspect', true],
    ['probe suspect', state('SUSPECT', null), 'ProbeSuspect', true],
    ['probe suspect and gateways suspect', state('SUSPECT', 'SUSPECT'), 'ProbeSuspect', true],
  ])('%s → %s', (_name, s, reason, healthy) => {
    expect(healthReason(s)?.reason).toBe(reason);
    expect(healthVerdictOf(s)).toMatchObject({ reason, healthy });
    // Lease selection tells SUSPECT from the reason alone (leases/health.ts isSuspect).
    expect(SUSPECT_REASONS.has(reason)).toBe(s.verdict === 'SUSPECT');
  });

  it('PassiveFailures names every failure that counts, not only dials and handshakes', () => {
    // workers/passive.ts signalsOf: a window of only RESPONSE_HEADERS/TUNNEL failures (a dead target
    // behind a working proxy) fails the proxy too, so the message must not send the operator to the
    // gateway's egress and credentials alone.
    expect(healthReason(state('AVAILABLE', 'UNHEALTHY'))).toEqual({
      reason: 'PassiveFailures',
      message:
        'gateways keep failing through the proxy (failed dials or handshakes, or failed requests with no ' +
        'success at all in the window; passive signals)',
    });
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

describe('TARGET tracks never make the proxy verdict (contract §6: per route, docs/health.md § TARGET)', () => {
  const withTargets = (
    basic: Verdict,
    egress: Verdict,
    targets: Verdict | null,
  ): Partial<Record<TrackKey, TrackState>> => ({
    ...tracksOf(basic, egress),
    'TARGET:shop': track(targets),
    'TARGET:news': track(targets),
  });
  it.each<[string, Verdict, Verdict, Verdict | null, Verdict, string]>([
    [
      'every target UNHEALTHY, active tiers AVAILABLE',
      'AVAILABLE',
      'AVAILABLE',
      'UNHEALTHY',
      'AVAILABLE',
      'ProbeSucceeded',
    ],
    ['targets SUSPECT', 'AVAILABLE', 'AVAILABLE', 'SUSPECT', 'AVAILABLE', 'ProbeSucceeded'],
    [
      'targets undecided: the active tiers alone decide',
      'AVAILABLE',
      'AVAILABLE',
      null,
      'AVAILABLE',
      'ProbeSucceeded',
    ],
    ['targets AVAILABLE, BASIC UNHEALTHY', 'UNHEALTHY', 'AVAILABLE', 'AVAILABLE', 'UNHEALTHY', 'ProbeFailed'],
    ['targets UNHEALTHY, EGRESS SUSPECT', 'AVAILABLE', 'SUSPECT', 'UNHEALTHY', 'SUSPECT', 'ProbeSuspect'],
  ])('%s', (_name, basic, egress, targets, verdict, reason) => {
    const tracks = withTargets(basic, egress, targets);
    expect(activeVerdict(tracks, BOTH)).toBe(verdict);
    const s: ProxyHealthState = { ...state('AVAILABLE', null), tracks, verdict };
    expect(healthReason(s)?.reason).toBe(reason);
    expect(healthVerdictOf(s)?.unreachableRoutes).toEqual(targets === 'UNHEALTHY' ? ['news', 'shop'] : []);
  });
});
