// Runs the check tiers for one proxy and turns probe outcomes into reducer inputs.
// BASIC: the proxy's own health-check URL when it has one (expected status), else a CONNECT handshake.
// EGRESS: the Hono service's echo endpoint fetched through the proxy; exit IP checked, and forwarding headers
// through an http echo (echo-scope.ts).
// No echo through the proxy counts against it only if the echo answers the prober itself (echoCheck).
// TARGET: each route's target check the proxy is selected for (target-checks.ts), fetched through it in
// a slot of the pass's TARGET pool (slot-pool.ts), apart from the proxy's own probe slot.

import type {
  ProbeOptions,
  ProbeResult,
  ProbeTarget,
} from '../../../shared/src/adapters/probe/proxy-probe.js';
import { evaluateEgress, parseEchoBody } from '../../../shared/src/domain/health/egress.js';
import type { TrackResult } from '../../../shared/src/domain/health/proxy-health.js';
import type { RouteTargetCheck } from '../../../shared/src/domain/health/target-checks.js';
import { trackKey } from '../../../shared/src/domain/health/verdict.js';
import type { ActiveTrack } from '../../../shared/src/domain/health/verdict-reason.js';
import type { HealthCheckSpec } from '../../../shared/src/domain/proxy.js';
import type { SlotPool } from './slot-pool.js';

/** Each check ends at its timeout, or at once when `cancel` is aborted (the pass gave up waiting). */
export interface Prober {
  probe(target: ProbeTarget, opts: ProbeOptions): Promise<ProbeResult>;
  handshake(
    target: ProbeTarget,
    authority: string,
    timeoutMs: number,
    cancel?: AbortSignal,
  ): Promise<ProbeResult>;
  /** The URL fetched by the prober itself, through no proxy (is the echo endpoint up at all?). */
  direct(opts: ProbeOptions): Promise<ProbeResult>;
}

/** Whether the echo endpoint answers the prober itself, as an echo, within the failing proxy's timeout:
 *  asked only after an EGRESS probe through a proxy failed without a verdict on what the echo saw, and at
 *  most once per pass for each timeout (echoCheck). */
export type EchoAnswers = (timeoutMs: number) => Promise<boolean>;

/**
 * `prober.direct` on the echo URL, asked once per timeout: each answer stands for the pass that made it,
 * for the proxies whose checks have that timeout. One answer for all, asked with the first failing proxy's
 * timeout, let a 1 s proxy decide for a 60 s one: an echo slower than 1 s (a cold start) read as down, and
 * every other proxy's missing echo went uncounted. Timeouts are whole seconds up to 60: a few checks a pass.
 */
export function echoCheck(prober: Prober, echoUrl: string, cancel?: AbortSignal): EchoAnswers {
  const answered = new Map<number, Promise<boolean>>();
  return (timeoutMs) => {
    let answer = answered.get(timeoutMs);
    if (!answer) {
      answer = prober.direct({ url: echoUrl, timeoutMs, expectedStatus: 200, cancel }).then(
        (r) => r.ok && parseEchoBody(r.body) !== null,
        () => false,
      );
      answered.set(timeoutMs, answer);
    }
    return answer;
  };
}

export interface TierConfig {
  /** Absolute http(s) URL of the echo endpoint (forwarding-header leaks show through http only:
   *  echo-scope.ts); null disables EGRESS. */
  echoUrl: string | null;
  /** Where BASIC's CONNECT handshake goes (its host and port) for a proxy without a health-check URL;
   *  absent or null: the echo URL's. */
  handshakeUrl?: string | null;
  /** The prober's own addresses: seeing one in a forwarding header is a leak. */
  callerIps: string[];
  rejectUnauthorized: boolean;
}

export interface TierOutcome {
  results: TrackResult[];
  /** For the `probe` log lines (seed §9 signal): one entry per tier actually run (per route for TARGET). */
  observations: Array<{
    tier: 'BASIC' | 'EGRESS' | 'TARGET';
    ok: boolean;
    latencyMs: number;
    code: string | null;
    /** TARGET only: the route whose check this was. */
    route?: string;
  }>;
}

/** The tiers a proxy's verdict waits for: EGRESS only when it runs at all (an echo endpoint is configured). */
export const activeTracksOf = (cfg: TierConfig): ActiveTrack[] =>
  cfg.echoUrl ? ['BASIC', 'EGRESS'] : ['BASIC'];

/** BASIC, then EGRESS: what the proxy's own verdict needs, run while the proxy holds its probe slot. */
export async function runActiveTiers(
  prober: Prober,
  target: ProbeTarget,
  proxyIp: string,
  hc: HealthCheckSpec,
  cfg: TierConfig,
  echoAnswers: EchoAnswers,
  /** Aborted once the pass has given up waiting (its budget): the check in flight ends, no tier starts. */
  cancel?: AbortSignal,
): Promise<
  TierOutcome & {
    basicOk: boolean;
    /** Where BASIC failed: DIAL (nothing answered at the proxy's address) or a later stage. */
    basicFailedAt: string | null;
    egressUncounted: boolean;
  }
> {
  const timeoutMs = hc.timeoutSeconds * 1000;
  const basic = hc.url
    ? await prober.probe(target, {
        url: hc.url,
        timeoutMs,
        expectedStatus: hc.expectedStatus,
        rejectUnauthorized: cfg.rejectUnauthorized,
        cancel,
      })
    : await prober.handshake(target, handshakeAuthority(cfg.handshakeUrl ?? cfg.echoUrl), timeoutMs, cancel);
  const results: TrackResult[] = [
    {
      track: 'BASIC',
      ok: basic.ok,
      latencyMs: basic.latencyMs,
      // Why it failed: the Healthy condition's message names it (verdict-reason.ts).
      ...(basic.ok ? {} : { problem: basic.failure?.code ?? 'basic_failed' }),
    },
  ];
  const observations: TierOutcome['observations'] = [
    { tier: 'BASIC', ok: basic.ok, latencyMs: basic.latencyMs, code: basic.failure?.code ?? null },
  ];
  // EGRESS only means something through a proxy that answers at all; a dead proxy fails BASIC already.
  if (cfg.echoUrl && basic.ok && !cancel?.aborted) {
    const echo = await prober.probe(target, { url: cfg.echoUrl, timeoutMs, expectedStatus: 200, cancel });
    const observed = echo.ok ? parseEchoBody(echo.body) : null;
    // The proxy's own address is the one this request reached it at: status.ip is the endpoint host as
    // entered, a DNS name for many external proxies, which no exit address ever equals as text.
    const own = echo.proxyAddress ?? proxyIp;
    const problem = !echo.ok
      ? (echo.failure?.code ?? 'echo_failed')
      : observed
        ? evaluateEgress(observed, own, cfg.callerIps, hc.exitIp)
        : 'bad_echo_response';
    observations.push({ tier: 'EGRESS', ok: problem === null, latencyMs: echo.latencyMs, code: problem });
    // No echo, or not an echo, through a proxy that passed BASIC: the proxy's fault only if the endpoint
    // answers the prober itself. Otherwise (the API down, or a revision that breaks the echo) it says
    // nothing about the proxy, and counted it would turn every proxy of the fleet UNHEALTHY at once.
    if (problem !== null && observed === null && !(await echoAnswers(timeoutMs))) {
      return { results, observations, basicOk: basic.ok, basicFailedAt: null, egressUncounted: true };
    }
    results.push({
      track: 'EGRESS',
      ok: problem === null,
      latencyMs: echo.latencyMs,
      ...(problem ? { problem } : {}),
    });
  }
  const basicFailedAt = basic.ok ? null : (basic.failure?.stage ?? null);
  return { results, observations, basicOk: basic.ok, basicFailedAt, egressUncounted: false };
}

/**
 * The proxy's TARGET checks (run only once BASIC passed: a proxy failing it tells nothing about a target,
 * and keeps its TARGET tracks), each in a slot of the pass-wide `pool`, all queued at once: a target that
 * hangs costs the checks one timeout, not one per check queued behind it. A check that finds no slot within
 * one `timeoutSeconds` is `skipped` — no result, so its track stays as it is — so the TARGET tier adds at
 * most two timeouts to the pass after the proxy's BASIC/EGRESS verdict, however many checks are queued.
 */
export async function runTargetTier(
  prober: Prober,
  target: ProbeTarget,
  hc: HealthCheckSpec,
  cfg: TierConfig,
  checks: readonly RouteTargetCheck[],
  pool: SlotPool,
  cancel?: AbortSignal,
): Promise<TierOutcome & { skipped: string[] }> {
  const timeoutMs = hc.timeoutSeconds * 1000;
  const outcomes = await Promise.all(
    checks.map((c) =>
      pool.run(
        () =>
          prober.probe(target, {
            url: c.url,
            timeoutMs,
            expectedStatus: c.expectedStatus,
            rejectUnauthorized: cfg.rejectUnauthorized,
            cancel,
          }),
        timeoutMs,
      ),
    ),
  );
  const out: TierOutcome & { skipped: string[] } = { results: [], observations: [], skipped: [] };
  for (const [i, c] of checks.entries()) {
    const o = outcomes[i]!;
    if (!o.ran) {
      out.skipped.push(c.route);
      continue;
    }
    const r = o.value;
    out.results.push({ track: trackKey('TARGET', c.route), ok: r.ok, latencyMs: r.latencyMs });
    out.observations.push({
      tier: 'TARGET',
      route: c.route,
      ok: r.ok,
      latencyMs: r.latencyMs,
      code: r.failure?.code ?? null,
    });
  }
  return out;
}

function handshakeAuthority(url: string | null): string {
  if (!url) return 'www.google.com:443';
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`;
}
