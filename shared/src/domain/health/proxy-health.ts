// One proxy's health across its tracks, and the pure decision a probe pass makes for it:
//   (persisted state | seed from status, results, now) → next state, whether to write it, what to publish.
// Writes happen only when the state changed (clamped counters make a steady proxy a fixed point);
// reconcile requests are published only when what status shows would change: the Healthy condition or its
// reason (a verdict transition, SUSPECT included), a latency report, or the routes the proxy cannot reach
// (its UNHEALTHY TARGET tracks: status.unreachableRoutes, docs/health.md § TARGET).
import { type LatencyReport, shouldReportLatency } from './latency.js';
import {
  DEFAULT_PASSIVE_SETTINGS,
  nextPassive,
  type PassiveSettings,
  type PassiveTrack,
  samePassive,
} from './passive-track.js';
import { healthyOf, reduceTrack, sameTrack } from './reducer.js';
import { sameRoutes, unreachableRoutesOf, withoutStaleTargets } from './target-tracks.js';
import { freshTrack, type Thresholds, type TrackKey, type TrackState, type Verdict } from './verdict.js';
import {
  ACTIVE_TRACKS,
  type ActiveTrack,
  activeVerdict,
  healthReason,
  keptActiveVerdict,
  withPassive,
} from './verdict-reason.js';

export interface ProxyHealthState {
  proxy: string;
  /** The instance the counters belong to (providerId, or the endpoint for external proxies). */
  instance: string;
  tracks: Partial<Record<TrackKey, TrackState>>;
  /** The proxy-level verdict: the worst of BASIC, EGRESS (when run) and PASSIVE (when present); null until
   *  every active tier has one, unless one is already UNHEALTHY (verdict-reason.ts). */
  verdict: Verdict | null;
  /** The active tiers' verdict that `verdict` was made from (PASSIVE not counted). While a tier is still
   *  undecided (EGRESS just configured, or its echo endpoint not answering the prober) it is kept, and the
   *  gateways' PASSIVE track still moves the verdict over it — both ways. Absent in an older document: what
   *  its tracks give stands in (keptActiveVerdict). Not compared by sameHealth: it follows the tracks (which
   *  are) while they decide, and is carried unchanged while one is undecided. */
  activeVerdict?: Verdict | null;
  /** The gateways' evidence (passive-track.ts); absent or null when they have said nothing bad. */
  passive?: PassiveTrack | null;
  latency: LatencyReport;
  /** Why the EGRESS tier failed (e.g. exit_ip_mismatch, forwarded_header_leak), as of the last write; null
   *  when fine. Kept while the EGRESS track is UNHEALTHY, cleared when it leaves UNHEALTHY (a single pass
   *  short of successThreshold does not). Not compared by sameHealth, as basicProblem is not. */
  egressProblem: string | null;
  /** Why the BASIC tier failed (e.g. econnrefused, connect_status_403, timeout), as of the last write:
   *  absent once its track has left UNHEALTHY (kept through passes short of successThreshold). Not compared
   *  by sameHealth, so a failing proxy whose code changes once its track is clamped costs no write; the
   *  code stored is that of the failure that made the verdict. */
  basicProblem?: string | null;
  /** When the last status-affecting change (verdict flip or latency report) happened: lastHealthCheckTime. */
  transitionAt: Date | null;
  /** The last LATENCY_HISTORY latency reports, oldest first (the fleet page's sparkline). Appended only
   *  when a latency is reported, so it adds no write: a steady proxy still writes nothing. */
  latencyHistory?: LatencySample[];
}

export interface LatencySample {
  ms: number;
  at: Date;
}

export const LATENCY_HISTORY = 20;

export interface HealthSeed {
  /** The Healthy condition already in status, if any: a new function instance must not reset the fleet. */
  healthy: boolean | null;
  latencyMillis: number | null;
  lastHealthCheckTime: Date | null;
}

export interface TrackResult {
  track: TrackKey;
  ok: boolean;
  latencyMs: number;
  problem?: string;
}

/** This tick's gateway evidence for the proxy: `signal` null when there was none (the track may expire). */
export interface PassiveInput {
  signal: boolean | null;
  settings: PassiveSettings;
}

const NO_PASSIVE_SIGNAL: PassiveInput = { signal: null, settings: DEFAULT_PASSIVE_SETTINGS };

export interface HealthDecision {
  next: ProxyHealthState;
  write: boolean;
  /** Publish a reconcile request so that reconcile folds the new verdict/latency into status. */
  publish: 'health-transition' | null;
}

export function initialHealth(
  proxy: string,
  instance: string,
  seed: HealthSeed | null,
  t: Thresholds,
): ProxyHealthState {
  const seeded = seed?.healthy ?? null;
  const track: TrackState =
    seeded === null
      ? freshTrack()
      : seeded
        ? { verdict: 'AVAILABLE', consecutiveOk: t.successThreshold, consecutiveFail: 0 }
        : { verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: t.failureThreshold };
  return {
    proxy,
    instance,
    tracks: seeded === null ? {} : { BASIC: track, EGRESS: { ...track } },
    verdict: seeded === null ? null : track.verdict,
    activeVerdict: seeded === null ? null : track.verdict,
    latency: { reportedMs: seed?.latencyMillis ?? null, reportedAt: seed?.lastHealthCheckTime ?? null },
    egressProblem: null,
    transitionAt: seed?.lastHealthCheckTime ?? null,
    passive: null,
  };
}

export function decideHealth(
  persisted: ProxyHealthState | null,
  proxy: string,
  instance: string,
  seed: HealthSeed | null,
  results: TrackResult[],
  /** The active tiers the probe runs (BASIC, and EGRESS when the echo tier is configured). */
  active: readonly ActiveTrack[],
  thresholds: Thresholds,
  now: Date,
  passiveInput: PassiveInput = NO_PASSIVE_SIGNAL,
  /** The TARGET tracks that apply to the proxy this tick (target-checks.ts targetKeysOf); the others are
   *  dropped. Null — the routing could not be read, or a pass that runs no TARGET checks — keeps them all. */
  targets: ReadonlySet<TrackKey> | null = null,
): HealthDecision {
  // A replaced instance starts with fresh counters (seed §6: state pruned on replacement).
  const base =
    persisted && persisted.instance === instance
      ? persisted
      : initialHealth(proxy, instance, persisted ? null : seed, thresholds);
  // TARGET tracks never make the proxy's verdict (verdict-reason.ts counts the active tiers only); one of a
  // route that no longer checks this proxy would list it as unreachable forever: dropped.
  const tracks = { ...withoutStaleTargets(base.tracks, targets) };
  // A tier the probe does not run (EGRESS without an echo endpoint; a seeded track) would hold its verdict
  // forever: it is dropped, so an UNHEALTHY one cannot pin the proxy.
  for (const k of ACTIVE_TRACKS) if (!active.includes(k)) delete tracks[k];
  let egressProblem = active.includes('EGRESS') ? base.egressProblem : null;
  let basicProblem = base.basicProblem ?? null;
  for (const r of results) {
    const track = reduceTrack(tracks[r.track] ?? freshTrack(), r.ok, thresholds);
    tracks[r.track] = track;
    // A passing result clears a tier's problem only once its track has left UNHEALTHY: one pass short of
    // successThreshold, the track — and the verdict it makes — is still UNHEALTHY, and its problem still
    // explains it. Cleared on the first pass, a flapping exit swapped the reason EgressCheckFailed ↔
    // ProbeFailed at every probe (a health write, a publish and a status write each), with no threshold met.
    const recovered = track.verdict !== 'UNHEALTHY';
    if (r.track === 'EGRESS') {
      egressProblem = r.ok ? (recovered ? null : egressProblem) : (r.problem ?? 'egress_failed');
    }
    if (r.track === 'BASIC') {
      basicProblem = r.ok ? (recovered ? null : basicProblem) : (r.problem ?? 'basic_failed');
    }
  }
  const passive = nextPassive(base.passive ?? null, passiveInput.signal, passiveInput.settings, now);
  // A tier still undecided (EGRESS just configured, a proxy whose BASIC failed from its first probe passing
  // again, or an echo endpoint that does not answer the prober) leaves the active tiers' verdict where it
  // was: it flips only when a track reaches its threshold, never back to "unknown". The gateways' word still
  // counts over it: kept as the whole verdict, a proxy they fail at every use stayed Healthy (and one they
  // had failed stayed UNHEALTHY once they stopped) until the undecided tier decided — never, for the whole
  // fleet, while the echo endpoint was down.
  const activeNow = activeVerdict(tracks, active) ?? keptActiveVerdict(base);
  const verdict = withPassive(activeNow, passive);
  const basic = results.find((r) => r.track === 'BASIC' && r.ok);
  const reportLatency = basic !== undefined && shouldReportLatency(base.latency, basic.latencyMs, now);
  const latency =
    reportLatency && basic ? { reportedMs: Math.round(basic.latencyMs), reportedAt: now } : base.latency;
  const history = base.latencyHistory ?? [];
  const latencyHistory =
    reportLatency && latency.reportedMs !== null
      ? [...history, { ms: latency.reportedMs, at: now }].slice(-LATENCY_HISTORY)
      : history;
  const healthFlipped = healthyOf(verdict) !== healthyOf(base.verdict);
  const basicWhy = basicProblem === null ? {} : { basicProblem };
  const draft: ProxyHealthState = {
    ...base,
    tracks,
    verdict,
    activeVerdict: activeNow,
    egressProblem,
    ...basicWhy,
    passive,
  };
  if (basicProblem === null) delete draft.basicProblem;
  // Any change of the Healthy condition's reason is a change reconcile writes (docs/health.md): SUSPECT in
  // or out (ProbeSucceeded ↔ ProbeSuspect/PassiveSuspect, Healthy stays True), or an unhealthy proxy whose
  // probe passes again while the gateways still fail it (ProbeFailed → PassiveFailures).
  const reasonChanged = healthReason(draft)?.reason !== healthReason(base)?.reason;
  // A route entering or leaving status.unreachableRoutes: the snapshots add or lift the proxy's exclusion
  // from it (excludedRoutes) only once reconcile has written it.
  const routesChanged = !sameRoutes(unreachableRoutesOf(tracks), unreachableRoutesOf(base.tracks));
  const publish =
    healthFlipped || reasonChanged || reportLatency || routesChanged ? 'health-transition' : null;
  // Never earlier than the stored one: an overlapping run that outlived the next re-decides on its newer
  // state at its own (older) window end, and lastHealthCheckTime must not go back.
  const transitionAt =
    publish && !(base.transitionAt && base.transitionAt.getTime() > now.getTime()) ? now : base.transitionAt;
  const next: ProxyHealthState = {
    proxy,
    instance,
    tracks,
    verdict,
    activeVerdict: activeNow,
    latency,
    egressProblem,
    ...basicWhy,
    transitionAt,
    latencyHistory,
    passive,
  };
  return { next, write: persisted === null || !sameHealth(persisted, next), publish };
}

/**
 * Whether `b` would write anything `a` does not hold. The failure codes (basicProblem, egressProblem) are
 * not compared: they explain a verdict, and a steadily failing proxy whose failures change name (timeout,
 * econnreset, …) would otherwise be written at every probe. They are stored whenever the state is written
 * for another reason — a verdict or reason change, which is when the Healthy message is written too.
 */
export function sameHealth(a: ProxyHealthState, b: ProxyHealthState): boolean {
  if (a.instance !== b.instance || a.verdict !== b.verdict) return false;
  if (a.latency.reportedMs !== b.latency.reportedMs) return false;
  if (a.latency.reportedAt?.getTime() !== b.latency.reportedAt?.getTime()) return false;
  if (a.transitionAt?.getTime() !== b.transitionAt?.getTime()) return false;
  if (!samePassive(a.passive ?? null, b.passive ?? null)) return false;
  const keys = new Set([...Object.keys(a.tracks), ...Object.keys(b.tracks)]) as Set<TrackKey>;
  for (const k of keys) {
    const x = a.tracks[k];
    const y = b.tracks[k];
    if (!x || !y || !sameTrack(x, y)) return false;
  }
  return true;
}

/** What reconcile folds into status (seed §6 applyHealth): null until the proxy has a verdict. */
export function healthVerdictOf(s: ProxyHealthState): {
  healthy: boolean;
  latencyMillis: number | null;
  checkedAt: Date;
  reason: string;
  message: string;
  unreachableRoutes: string[];
} | null {
  const healthy = healthyOf(s.verdict);
  const why = healthReason(s);
  if (healthy === null || why === null) return null;
  return {
    healthy,
    latencyMillis: s.latency.reportedMs,
    checkedAt: s.transitionAt ?? s.latency.reportedAt ?? new Date(0),
    reason: why.reason,
    message: why.message,
    unreachableRoutes: unreachableRoutesOf(s.tracks),
  };
}
