// One probe pass over the fleet: observe (proxies with an address, due in this window; their health
// state) → probe with bounded concurrency (BASIC/EGRESS in the proxy slots, TARGET in slots of its own)
// → decide (pure reducer) → write only changed states, each on top of the version it was decided on (one
// that lost to an overlapping pass is decided again: health-writes.ts), publish transitions (and again for
// a status that still lags a stored verdict), prune state of proxies that are gone.

import pLimit from 'p-limit';
import { withDeadline } from '../../../shared/src/adapters/deadline.js';
import { loggedProxies } from '../../../shared/src/adapters/log/logged-proxies.js';
import {
  basicUserPass,
  credentialsRuleOf,
  parseProxyCredentials,
} from '../../../shared/src/domain/cloud-init/credentials.js';
import { hashFraction, isDueInWindow } from '../../../shared/src/domain/health/due.js';
import { healthInstanceKey } from '../../../shared/src/domain/health/instance-key.js';
import {
  decideHealth,
  type HealthDecision,
  type HealthSeed,
  type ProxyHealthState,
} from '../../../shared/src/domain/health/proxy-health.js';
import { statusLags } from '../../../shared/src/domain/health/status-lag.js';
import {
  type RouteTargetCheck,
  targetChecksFor,
  targetKeysOf,
} from '../../../shared/src/domain/health/target-checks.js';
import { unreachableRoutesOf } from '../../../shared/src/domain/health/target-tracks.js';
import {
  ConditionType,
  type ProxyResource,
  proxyProtocol,
  type SecretRef,
} from '../../../shared/src/domain/proxy.js';
import type { PublishHolds } from '../../../shared/src/domain/publish-holds.js';
import { clientCredentialsRef } from '../../../shared/src/domain/served-credentials.js';
import type { RoutingRule } from '../../../shared/src/messages/gateway-snapshot.js';
import type { HealthStore } from '../../../shared/src/ports/health-store.js';
import { mayStillBeSent } from '../../../shared/src/ports/publish-error.js';
import type { ReconcilePublisher } from '../../../shared/src/ports/reconcile-publisher.js';
import { SecretAccessError } from '../../../shared/src/ports/secrets.js';
import { type Decided, storeDecisions } from './health-writes.js';
import type { PassiveDeps } from './passive-pass.js';
import type { ProbeRecorder } from './probe-recorder.js';
import { realTimer, SlotPool, type Timer } from './slot-pool.js';
import {
  activeTracksOf,
  echoCheck,
  type Prober,
  runActiveTiers,
  runTargetTier,
  type TierConfig,
  type TierOutcome,
} from './tiers.js';

/**
 * How long the probe's credentials cache (wiring.ts) waits for Secret Manager before it answers with its
 * stale copy (docs/health.md § Credentials): the shortest check timeout allowed (healthCheck.timeoutSeconds
 * ≥ 1), well under the default 5 s. Unbounded, AccessSecretVersion retries UNAVAILABLE for up to 600 s, and
 * every probe slot waited on it. A read with no copy: CREDENTIALS_MISS_DEADLINE_MS.
 */
export const CREDENTIALS_READ_DEADLINE_MS = 1_000;

/**
 * The same for a read with no copy to serve: a new instance's first read (sign-in, a new channel) may take
 * over a second, and cut at 1 s it lost every credentialed proxy's pass; unbounded but by the check's
 * timeout, an outage held each slot for the read and then the check — twice the timeout a proxy.
 */
export const CREDENTIALS_MISS_DEADLINE_MS = 3_000;

/** The default TARGET slots per probe slot (docs/health.md § TARGET: the numbers behind it). */
export const TARGET_CONCURRENCY_FACTOR = 4;

export interface ProbeLog {
  info(message: string, fields: Record<string, unknown>): void;
  warn(message: string, fields: Record<string, unknown>): void;
}

export interface ProbeDeps {
  health: HealthStore;
  publisher: ReconcilePublisher;
  secrets: { access(ref: SecretRef): Promise<string> };
  prober: Prober;
  log: ProbeLog;
  /** Every probe observed (seed §9); the entry point wires logProbeRecorder. */
  recorder: ProbeRecorder;
  tiers: TierConfig;
  /** Proxies whose BASIC/EGRESS run at once (PROBE_CONCURRENCY). */
  concurrency: number;
  /** TARGET checks in flight at once across the pass (PROBE_TARGET_CONCURRENCY); default
   *  TARGET_CONCURRENCY_FACTOR × concurrency. */
  targetConcurrency?: number;
  /** How a TARGET check waits for a slot (real timers unless a test drives it). */
  timer?: Timer;
  passive: PassiveDeps;
  /**
   * What this function instance published for each proxy's health, by the transition it was about
   * (`transitionAt`): a status that still lags that verdict is published again 5 minutes after it, then
   * at gaps doubling to 80 minutes (PublishHolds), not on every tick while reconcile cannot fold it (a
   * Compute outage: each request has Pub/Sub's own ~90-minute retry chain). The entry point keeps one per
   * instance; unset, a lagging status is published again once per run.
   */
  republished?: PublishHolds;
}

export interface PassCounts {
  proxies: number;
  probed: number;
  written: number;
  transitions: number;
}

/** `all` is the fleet as listed once per invocation: a loop of passes inside one tick reads it once, so
 *  `sent` (the proxies whose reconcile request went out earlier in this invocation) keeps a later pass
 *  from taking the status it listed before that request was answered for a lagging one. `routes` is the
 *  stored routing as read once per tick ([] when there is none), or null when it could not be read: no
 *  TARGET check runs and every TARGET track stays as it is. Null when the budget was spent before the
 *  health states of the due proxies were read: the pass decided nothing, and its window is still to do. */
export function runProbePass(
  deps: ProbeDeps,
  all: ProxyResource[],
  from: Date,
  to: Date,
  sent?: Set<string>,
  routes?: readonly RoutingRule[] | null,
): Promise<PassCounts>;
export function runProbePass(
  deps: ProbeDeps,
  all: ProxyResource[],
  from: Date,
  to: Date,
  sent?: Set<string>,
  routes?: readonly RoutingRule[] | null,
  /** How long this pass may take to decide (the run's budget left), from its start; unset: as long as it takes. */
  budgetMs?: number,
): Promise<PassCounts | null>;
export async function runProbePass(
  deps: ProbeDeps,
  all: ProxyResource[],
  from: Date,
  to: Date,
  sent: Set<string> = new Set(),
  routes: readonly RoutingRule[] | null = null,
  budgetMs?: number,
): Promise<PassCounts | null> {
  const budget = passBudget(deps, budgetMs);
  try {
    return await probePass(deps, all, from, to, sent, routes, budget);
  } finally {
    budget.stop(); // the budget's timer never outlives the pass (nor keeps the process up)
  }
}

async function probePass(
  deps: ProbeDeps,
  all: ProxyResource[],
  from: Date,
  to: Date,
  sent: Set<string>,
  routes: readonly RoutingRule[] | null,
  budget: PassBudget,
): Promise<PassCounts | null> {
  const budgetMs = budget.ms;
  const addressed = all.filter(probeable);
  const due = addressed.filter((p) =>
    isDueInWindow(p.uid, p.spec.healthCheck.intervalSeconds * 1000, from, to),
  );
  // Within the budget too: a slow read (Firestore) took the budget's time before any probe began, and the
  // pass, waiting its full budget for the decisions after it, ran past the function's timeout.
  const read = deps.health.getMany(due.map((p) => p.name));
  const persisted = await budget.within(read);
  if (persisted === SPENT) {
    read.catch(() => {}); // let go: its failure, if any, is no longer this pass's
    if (due.length > 0) {
      deps.log.warn(
        'probe pass out of time reading the health states: its proxies are left to the next run',
        {
          event: 'probe.pass_budget_spent',
          budgetMs,
          decided: 0,
          undecided: due.length,
          first: due.slice(0, 10).map((p) => p.name),
        },
      );
    }
    return null;
  }
  const pool = new SlotPool(
    deps.targetConcurrency ?? TARGET_CONCURRENCY_FACTOR * deps.concurrency,
    deps.timer,
  );
  const skipped = new Map<string, number>();
  // Aborted when the pass gives up waiting (its budget): every check in flight ends at once, none starts.
  const giveUp = new AbortController();
  const abandoned = () => giveUp.signal.aborted;
  const echoAnswers = echoCheck(deps.prober, deps.tiers.echoUrl ?? '', giveUp.signal);
  const egressUncounted: string[] = [];
  const credentialsUnavailable: string[] = [];
  let credentialsUnknownDead = 0;
  // Decisions as they come in: at the budget, the pass stores these and leaves the rest undecided.
  const settled: Decided<ActiveDecision>[] = [];
  // Proxies whose BASIC/EGRESS verdict is in while their TARGET checks still run: at the budget each is
  // decided on that verdict alone, its TARGET tracks kept (as when a check gets no slot) — a slow or hanging
  // target site must not throw away the proxy's own result, run after run.
  const activeOnly = new Map<string, () => Decided<ActiveDecision>>();
  // A proxy holds its probe slot (`concurrency`) for its BASIC/EGRESS verdict only; its TARGET checks then
  // wait for the pass's TARGET slots while the slot probes the next proxy (docs/health.md § TARGET). Each
  // proxy's decision waits for both, and the pass writes once, after every decision.
  const probing = pLimit(deps.concurrency).map(rotated(due, to), async (p) => {
    if (abandoned()) return NO_DECISION;
    // Routes pick among gateway-pool proxies only (their snapshots hold no other): a check through any
    // other proxy judges a route no gateway could pick it for, and its tracks are dropped (empty set).
    const checks = routes && p.spec.gatewayPool ? targetChecksFor(routes, p.spec.attributes) : [];
    const { credentialsUnknown, ...via } = await target(deps, p);
    if (abandoned()) return NO_DECISION; // the pass is over: nothing more starts
    const active = await runActiveTiers(
      deps.prober,
      via,
      p.status.ip!,
      p.spec.healthCheck,
      deps.tiers,
      echoAnswers,
      giveUp.signal,
    );
    if (abandoned()) return NO_DECISION; // cut short or too late: nothing more starts, nothing is recorded
    // Probed without the credentials Secret Manager could not give now: a proxy that answered at all
    // (passed, or failed past DIAL — a 407 is an answer) says nothing about itself, and counted it would
    // fail every credentialed proxy of the fleet at once; one that nothing answers for is dead anyway.
    if (credentialsUnknown && active.basicFailedAt !== 'DIAL') {
      credentialsUnavailable.push(p.name);
      return NO_DECISION;
    }
    if (credentialsUnknown) credentialsUnknownDead++;
    if (active.egressUncounted) egressUncounted.push(p.name);
    // Recorded as soon as they are in: a pass that runs out of time while this proxy's TARGET checks wait
    // for their slots still shows what its BASIC and EGRESS checks found.
    for (const o of active.observations) deps.recorder.observe(p.name, o);
    const decidedOn = (outcome: TierOutcome): Decided<ActiveDecision> => {
      const read = persisted.get(p.name);
      const redecide = (state: ProxyHealthState | null) =>
        decide(deps, p, state, outcome, checks, routes, to, sent);
      return { decision: redecide(read?.state ?? null), base: read?.version ?? null, redecide };
    };
    if (active.basicOk && checks.length > 0) activeOnly.set(p.name, () => decidedOn(active));
    const decided = (async (): Promise<Decided<ActiveDecision> | null> => {
      const targets =
        active.basicOk && checks.length > 0
          ? await runTargetTier(deps.prober, via, p.spec.healthCheck, deps.tiers, checks, pool, giveUp.signal)
          : { results: [], observations: [], skipped: [] };
      if (abandoned()) return null; // cut short or decided too late: not recorded, not stored
      for (const route of targets.skipped) skipped.set(route, (skipped.get(route) ?? 0) + 1);
      const outcome = {
        results: [...active.results, ...targets.results],
        observations: [...active.observations, ...targets.observations],
      };
      for (const o of targets.observations) deps.recorder.observe(p.name, o);
      const d = decidedOn(outcome);
      activeOnly.delete(p.name);
      settled.push(d);
      return d;
    })();
    // Awaited below, once the probe slots have gone through every due proxy; until then its failure must
    // not surface as an unhandled rejection (nor at all when that loop throws: the pass fails anyway).
    decided.catch(() => {});
    return { decided };
  });
  const everyDecision = probing.then((pending) => Promise.all(pending.map((x) => x.decided)));
  const decided = await withinBudget(budget, everyDecision, () => {
    // Synchronous: the checks it ends settle later, so `settled` below is what was decided in time —
    // with, for each proxy whose TARGET checks were still running, its BASIC/EGRESS verdict alone.
    giveUp.abort();
    const cut = [...activeOnly.keys()];
    for (const decideActiveOnly of activeOnly.values()) settled.push(decideActiveOnly());
    activeOnly.clear();
    if (cut.length > 0) {
      // Their own health moved; only their routes' TARGET tracks did not (a target site slow or hanging).
      deps.log.warn(
        'probe pass out of time for TARGET checks: decided on BASIC/EGRESS alone, TARGET tracks kept',
        {
          budgetMs,
          proxies: cut.length,
          first: cut.slice(0, 10),
        },
      );
    }
    const decidedNames = new Set(settled.map((d) => d.decision.next.proxy));
    const skippedNames = new Set(credentialsUnavailable);
    const undecided = due.filter((p) => !decidedNames.has(p.name) && !skippedNames.has(p.name));
    if (undecided.length > 0) {
      deps.log.warn('probe pass out of time: the proxies not decided yet wait for their next slot', {
        event: 'probe.pass_budget_spent',
        budgetMs,
        decided: settled.length,
        undecided: undecided.length,
        // a proxy named here run after run has checks longer than the budget: its health is not moving
        first: undecided.slice(0, 10).map((p) => p.name),
      });
    }
    return [...settled];
  });
  if (credentialsUnavailable.length > 0) {
    deps.log.warn(
      'proxy credentials unavailable right now (Secret Manager); only liveness judged this pass',
      {
        event: 'probe.credentials_unavailable',
        proxies: credentialsUnavailable.length,
        first: credentialsUnavailable.slice(0, 10),
        // whose credentials could not be read either, but which nothing answered for: counted as failing
        judgedDead: credentialsUnknownDead,
      },
    );
  }
  if (skipped.size > 0) {
    deps.log.warn('TARGET checks skipped: no TARGET slot free within the check timeout; their tracks kept', {
      skipped: [...skipped.values()].reduce((a, b) => a + b, 0),
      routes: Object.fromEntries([...skipped].sort(([a], [b]) => a.localeCompare(b))),
      targetConcurrency: pool.size,
    });
  }
  if (egressUncounted.length > 0) {
    deps.log.warn('echo endpoint does not answer the prober either; EGRESS failures not counted this pass', {
      event: 'probe.echo_unavailable',
      proxies: egressUncounted.length,
    });
  }
  // Another pass (the next invocation's, overlapping this one) may have written a proxy since it was read:
  // that proxy is decided again with the same results, on what is stored now.
  const { decisions, written } = await storeDecisions(deps, decided);
  for (const d of decisions) logDecision(deps, d);
  const transitions = await publishTransitions(deps, decisions, to, sent);
  return {
    proxies: all.length,
    probed: due.length,
    written,
    transitions,
  };
}

/** What `PassBudget.within` gives once the pass's budget has passed. */
const SPENT: unique symbol = Symbol('budget spent');

interface PassBudget {
  ms: number | undefined;
  /** `work`'s value, or SPENT if the budget — counted from the pass's start — passes first. */
  within<T>(work: Promise<T>): Promise<T | typeof SPENT>;
  stop(): void;
}

/** The pass's budget, its timer started now (never, when `ms` is unset: `within` then waits for the work). */
function passBudget(deps: ProbeDeps, ms: number | undefined): PassBudget {
  const stop = new AbortController();
  const over: Promise<typeof SPENT> | null =
    ms === undefined ? null : (deps.timer ?? realTimer)(Math.max(0, ms), stop.signal).then(() => SPENT);
  return {
    ms,
    within: (work) => (over === null ? work : Promise.race([work, over])),
    stop: () => stop.abort(),
  };
}

/**
 * Every decision, or — once the budget has passed — those in by then (`spent()`): one proxy whose checks
 * run long (a 60 s timeout per tier, a hanging target) must not hold the whole pass past the function's
 * timeout, which would store nothing for anyone, at the same slot on every run. The checks still running
 * are cancelled by `spent()` (their sockets closed, not left to their own timeouts after the pass has
 * returned); a proxy whose BASIC/EGRESS verdict is in is decided on it (its TARGET tracks kept), the others
 * keep their tracks, and the next pass probes them.
 */
async function withinBudget<D>(
  budget: PassBudget,
  all: Promise<Array<D | null>>,
  spent: () => D[],
): Promise<D[]> {
  const done = all.then((ds) => ds.filter((d): d is D => d !== null));
  const out = await budget.within(done);
  if (out !== SPENT) return out;
  done.catch(() => {}); // let go: its failure, if any, is no longer this pass's
  return spent();
}

/** What a proxy the pass does not decide gives (abandoned, or only liveness asked and it answered). */
const NO_DECISION = { decided: Promise.resolve(null) };

/** A decision of the active pass; `lagging`: published again for a status that lags the stored verdict. */
type ActiveDecision = HealthDecision & { lagging?: true };

/** The due proxies starting at one that moves from pass to pass: when the TARGET slots cannot keep up,
 *  the checks skipped are those queued last, and a fixed (listing) order would skip the same proxies'
 *  checks in every pass, freezing their TARGET tracks for good. */
function rotated(due: ProxyResource[], to: Date): ProxyResource[] {
  if (due.length < 2) return due;
  const start = Math.floor(hashFraction(to.toISOString()) * due.length);
  return [...due.slice(start), ...due.slice(0, start)];
}

/** Decide (the pure reducer) for one proxy whose tiers have all run, on `persisted` as read. */
function decide(
  deps: ProbeDeps,
  p: ProxyResource,
  persisted: ProxyHealthState | null,
  outcome: TierOutcome,
  checks: readonly RouteTargetCheck[],
  routes: readonly RoutingRule[] | null,
  to: Date,
  sent: Set<string>,
): ActiveDecision {
  const dec = decideHealth(
    persisted,
    p.name,
    healthInstanceKey(p),
    seedOf(p),
    outcome.results,
    activeTracksOf(deps.tiers),
    p.spec.healthCheck,
    to,
    // No gateway signal in an active pass; a PASSIVE track left without signals expires here — after the
    // whole expiry: `to` is a moment of the run's loop, not a tick start, so the half-tick allowance for
    // tick-start jitter (passive-track.ts `tickPeriodMs`, the passive pass's) would drop it from ~150 s.
    { signal: null, settings: { ...deps.passive.settings, tickPeriodMs: undefined } },
    routes ? targetKeysOf(checks) : null,
  );
  if (dec.publish) return dec;
  // A stored verdict that status does not show: its publish was lost (seed §6: the next probe retries) —
  // or reconcile cannot fold it yet, and the request published for it is still being retried.
  if (
    !sent.has(p.name) &&
    statusLags(dec.next, p) &&
    !deps.republished?.holds(p.name, transitionKey(dec.next), to.getTime())
  )
    return { ...dec, publish: 'health-transition' as const, lagging: true };
  return dec;
}

/** What a health publish is about, for PublishHolds: the transition the stored state last made. */
const transitionKey = (next: ProxyHealthState): number => next.transitionAt?.getTime() ?? 0;

/** Logged once the decision holds (stored, or nothing to store): one lost to another pass says nothing. */
function logDecision(deps: ProbeDeps, d: ActiveDecision): void {
  if (d.lagging) {
    deps.log.info('health verdict not in status yet; publishing it again', {
      proxy: d.next.proxy,
      verdict: d.next.verdict,
      // A lost latency report lags too (status-lag.ts): the same verdict, another latency.
      latencyMillis: d.next.latency.reportedMs,
    });
  } else if (d.publish) {
    deps.log.info('health transition', {
      proxy: d.next.proxy,
      verdict: d.next.verdict,
      problem: d.next.egressProblem,
      basicProblem: d.next.basicProblem ?? null,
      unreachableRoutes: unreachableRoutesOf(d.next.tracks),
    });
  }
}

/** Publishes the transitions among `decisions`, after their states are stored: reconcile reads the state
 *  when the request arrives. A failed publish is logged, not thrown: the state is stored, so a retried
 *  tick's decision would find nothing new; instead the proxy's next active probe sees its status still
 *  lagging the stored verdict (status-lag.ts) and publishes again. `sent` collects the proxies whose
 *  request went out. */
export async function publishTransitions(
  deps: Pick<ProbeDeps, 'publisher' | 'log' | 'republished'>,
  decisions: HealthDecision[],
  now: Date,
  sent?: Set<string>,
): Promise<number> {
  const transitions = decisions.filter((d) => d.publish);
  const gone = (d: HealthDecision) => {
    sent?.add(d.next.proxy);
    deps.republished?.claim(d.next.proxy, transitionKey(d.next), now.getTime());
  };
  await Promise.all(
    transitions.map((d) =>
      deps.publisher.publish({ proxy: d.next.proxy, reason: 'health-transition' }).then(
        () => gone(d),
        (err: unknown) => {
          // Unconfirmed, the client library may still send it: counted as sent, or every probe of the
          // proxy in this run would hand the library another copy while Pub/Sub is slow.
          if (mayStillBeSent(err)) gone(d);
          deps.log.warn(
            mayStillBeSent(err)
              ? 'publishing a health transition is unconfirmed; it may still be sent'
              : 'publishing a health transition failed; the next probe of the proxy publishes again',
            {
              proxy: d.next.proxy,
              error: err instanceof Error ? err.message : String(err),
            },
          );
        },
      ),
    ),
  );
  return transitions.length;
}

/**
 * Whether the probe dials the proxy: it has an address and no deletion was requested (seed §6), and, if
 * managed, its status does not say its instance is not serving (Provisioned recorded, not True: stopped,
 * booting, replaced, latched). Reconcile clears the address of an instance it saw stopped or gone; this
 * keeps one it did not (a status written before) from being dialed — GCE releases a stopped VM's
 * ephemeral address, another project's VM may have it by now, and the probe would send it the proxy's
 * credentials.
 */
export function probeable(p: ProxyResource): boolean {
  if (!p.status.ip || p.deletionRequestedAt) return false;
  // An external proxy's endpoint edited, and not yet reconciled: its address is the old host, but its port
  // and credentials the new spec's — the new provider's password would go to the old host.
  if (p.spec.mode !== 'managed') return p.status.ip === p.spec.endpoint.host;
  const provisioned = p.status.conditions.find((c) => c.type === ConditionType.Provisioned);
  return provisioned === undefined || provisioned.status === 'True';
}

/** How to reach the proxy as a crawler would; `credentialsUnknown` when Secret Manager cannot say now. */
async function target(deps: ProbeDeps, p: ProxyResource) {
  const at = {
    host: p.status.ip!,
    port: p.spec.mode === 'managed' ? p.spec.port : p.spec.endpoint.port,
    protocol: proxyProtocol(p),
  };
  // The version the instance serves, as crawlers are handed it (served-credentials.ts).
  const ref = clientCredentialsRef(p);
  const payload = ref
    ? await readCredentials(deps, p.name, ref, p.spec.healthCheck.timeoutSeconds * 1000)
    : null;
  if (payload === undefined) return { ...at, credentials: null, credentialsUnknown: true };
  // Parsed as every reader parses it (a trailing newline is not part of the password). A malformed secret
  // is probed without credentials: the proxy answers 407 and counts as failing, which it is for crawlers.
  const parsed = payload === null ? null : parseProxyCredentials(payload, credentialsRuleOf(p.spec));
  if (parsed && !parsed.ok) {
    deps.log.warn('proxy credentials secret is malformed', { proxy: p.name, reason: parsed.reason });
  }
  const credentials = parsed?.ok ? basicUserPass(parsed.credentials) : null;
  return { ...at, credentials, credentialsUnknown: false };
}

/**
 * The secret's payload; null when it cannot be read for a reason of its own (deleted, IAM, a disabled
 * version): that proxy alone is probed without credentials, as a malformed secret is, and fails with 407 —
 * crawlers cannot use it either. undefined when Secret Manager cannot answer right now (a transient error,
 * past the cache's stale-if-error): that says nothing about the proxy — gateways and the lease API serve
 * from their own caches meanwhile — so the proxy is probed without credentials and only one that nothing
 * answers for is counted (runProbePass); the others keep their tracks. Thrown, either would abort
 * the whole pass and freeze the fleet's health. A read unanswered within the check's own timeout counts
 * as that transient failure: it holds the proxy's probe slot no longer than a check would (the read goes
 * on, and the cache keeps what it brings).
 */
async function readCredentials(
  deps: ProbeDeps,
  proxy: string,
  ref: SecretRef,
  timeoutMs: number,
): Promise<string | null | undefined> {
  try {
    return await withDeadline(
      deps.secrets.access(ref),
      timeoutMs,
      () => new SecretAccessError('transient', ref.secret, `no answer within ${timeoutMs} ms`),
    );
  } catch (err) {
    if (!(err instanceof SecretAccessError)) throw err;
    if (err.retryable) return undefined; // one line for the pass says so (runProbePass)
    deps.log.warn('proxy credentials secret cannot be read; probing without credentials', {
      proxy,
      secret: ref.secret,
      kind: err.kind,
    });
    return null;
  }
}

export function seedOf(p: ProxyResource): HealthSeed | null {
  const c = p.status.conditions.find((x) => x.type === 'Healthy');
  if (!c || c.status === 'Unknown') return null;
  return {
    healthy: c.status === 'True',
    latencyMillis: p.status.latencyMillis,
    lastHealthCheckTime: p.status.lastHealthCheckTime,
  };
}

/** Drops the health state of proxies that are gone from the store; logs their count and the first names. */
export async function pruneHealth(deps: ProbeDeps, live: Set<string>): Promise<number> {
  const gone = (await deps.health.listNames()).filter((n) => !live.has(n));
  if (gone.length === 0) return 0;
  await deps.health.deleteMany(gone);
  deps.log.info('pruned health state', loggedProxies(gone));
  return gone.length;
}
