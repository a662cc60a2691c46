// The passive pass of a probe tick (contract §5 → §6): read the gateway outcome batches received since the
// cursor, turn them into one pass/fail signal per proxy (workers/passive.ts), reduce each into its proxy's
// PASSIVE track, and commit the changed health states together with the moved cursor — so each batch is
// counted once, whatever the duplicate or concurrent ticks (ports/passive-feed.ts; docs/health.md for the
// limits). Each state goes in on top of the version it was decided on: when an overlapping active pass
// wrote one of the proxies meanwhile, the commit writes nothing, and the same signals are reduced again
// into the states read anew (at most HEALTH_WRITE_RETRIES times; then the window is left for the next
// tick). One commit takes at most PASSIVE_COMMIT_CAP changed states (passive-window.ts): a first batch that
// alone changes more has the states past the cap left uncounted (withinCap), so the cursor always moves.
// A window with no batch writes nothing unless tracked evidence expires (or the tracked list changes):
// a fleet without gateway traffic and nothing tracked costs zero writes per tick.
// Expiry: a proxy the gateways fail leaves their snapshots and gets no more outcomes, and its active probe
// may be an hour away (intervalSeconds up to 3600). So each tick the pass also reads the proxies of the
// cursor's `tracked` list it got no signal for — only those: a healthy fleet holds none — and expires the
// evidence that has had no signal for expiryMs (dropped; a SUSPECT track demoted, passive-track.ts), in the
// same commit, with or without batches in the window.
import { healthInstanceKey } from '../../../shared/src/domain/health/instance-key.js';
import { type PassiveSettings, samePassive } from '../../../shared/src/domain/health/passive-track.js';
import {
  decideHealth,
  type HealthDecision,
  type ProxyHealthState,
} from '../../../shared/src/domain/health/proxy-health.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import {
  type PassiveRule,
  type PassiveSignal,
  passiveSignals,
  type SuspectWorker,
} from '../../../shared/src/domain/workers/passive.js';
import type { HealthWrite, VersionedHealth } from '../../../shared/src/ports/health-store.js';
import type { PassiveFeedStore } from '../../../shared/src/ports/passive-feed.js';
import type { OutcomeBatchRecord, OutcomeReader } from '../../../shared/src/ports/workers.js';
import { HEALTH_WRITE_RETRIES } from './health-writes.js';
import { boundWindow, hasFailures, PASSIVE_COMMIT_CAP } from './passive-window.js';
import { type ProbeDeps, publishTransitions, seedOf } from './probe-pass.js';
import { activeTracksOf } from './tiers.js';

export interface PassiveDeps {
  outcomes: OutcomeReader;
  feed: PassiveFeedStore;
  settings: PassiveSettings;
  rule: PassiveRule;
  /** Batches younger than this may still be committing on another API instance: the next tick takes them. */
  settleMs: number;
}

export interface PassiveCounts {
  /** Outcome batches consumed (0 when none, or when another tick consumed the window). */
  outcomeBatches: number;
  passiveSignals: number;
  written: number;
  transitions: number;
}

const none = (): PassiveCounts => ({ outcomeBatches: 0, passiveSignals: 0, written: 0, transitions: 0 });

/** `sent` collects the proxies whose transition went out (runProbePass: not published again for lagging). */
export async function runPassivePass(
  deps: ProbeDeps,
  all: ProxyResource[],
  now: Date,
  sent?: Set<string>,
): Promise<PassiveCounts> {
  const { passive } = deps;
  const cursor = await passive.feed.cursor();
  const to = new Date(now.getTime() - passive.settleMs);
  // Evidence older than the expiry window would expire at once: never read further back (bounds the read
  // after an outage, and the first run's window). The whole window, though the expiry counts half a tick
  // less (passive-track.ts `tickPeriodMs`): that half tick more is read for nothing, and no evidence is lost.
  const floor = to.getTime() - passive.settings.expiryMs;
  const from = new Date(Math.max(cursor?.through.getTime() ?? floor, floor));
  if (to <= from) return none();
  const batches = await passive.outcomes.between(from, to);
  const tracked: ReadonlySet<string> = new Set(cursor?.tracked ?? []);
  // Nothing to count and no evidence to expire: no read, no write.
  if (batches.length === 0 && tracked.size === 0) return none();

  const live = new Map(all.filter((p) => p.status.ip && !p.deletionRequestedAt).map((p) => [p.name, p]));
  const persisted = new Map<string, VersionedHealth>();
  const readMissing = async (names: string[]) => {
    const missing = names.filter((n) => !persisted.has(n));
    for (const [k, v] of await deps.health.getMany(missing)) persisted.set(k, v);
  };

  let consumed = batches;
  // No batch read: the cursor stays where it is (a commit then only expires evidence). `tracked` is not
  // empty here, so neither is the cursor.
  let through = batches.length > 0 ? to : cursor!.through;
  let w = await evaluate(deps, consumed, live, tracked, persisted, readMissing, now);
  if (w.changed.length > PASSIVE_COMMIT_CAP && batches.length > 0) {
    // Too much for one commit: take only as many batches as keep the proxies that could change within
    // the cap (a superset of those that will: live, with stored state, and tracked or failed somewhere).
    const candidates = new Set<string>();
    for (const b of batches)
      for (const [proxy, t] of b.tallies)
        if (live.has(proxy) && (tracked.has(proxy) || hasFailures(t))) candidates.add(proxy);
    await readMissing([...candidates]);
    const n = boundWindow(
      batches,
      (proxy, t) => live.has(proxy) && persisted.has(proxy) && (tracked.has(proxy) || hasFailures(t)),
    );
    consumed = batches.slice(0, n);
    through = consumed.at(-1)!.receivedAt;
    deps.log.info('outcome window bounded to one commit; the next tick continues', {
      batches: n,
      of: batches.length,
      through: through.toISOString(),
    });
    w = await evaluate(deps, consumed, live, tracked, persisted, readMissing, now);
  }
  // The first batch (or batches of one instant) is taken whole, and alone it may still change more states
  // than a commit takes: the states past the cap are left out, so that the commit fits and the cursor moves.
  let uncounted: string[];
  let deferred: string[];
  ({ w, uncounted, deferred } = withinCap(w));
  for (let retry = 0; ; retry++) {
    const next = new Set(tracked);
    for (const d of w.decisions) {
      if (d.next.passive) next.add(d.next.proxy);
      else next.delete(d.next.proxy);
    }
    for (const name of w.untracked) next.delete(name);
    for (const name of next) if (!live.has(name)) next.delete(name);
    // No batch, nothing expired, the list as it was: nothing to commit (a tracked proxy whose evidence is
    // still fresh costs its read only).
    if (consumed.length === 0 && w.changed.length === 0 && sameSet(next, tracked)) return none();
    const committed = await passive.feed.commit(
      w.changed,
      { through, tracked: [...next].sort() },
      cursor?.token ?? null,
    );
    if (committed === 'committed') break;
    // Nothing was written. Either another tick moved the cursor (it counted the window), or another pass
    // — an overlapping invocation's active pass — wrote one of these proxies since it was read.
    const current = await passive.feed.cursor();
    if ((current?.token ?? null) !== (cursor?.token ?? null)) {
      const what =
        consumed.length > 0
          ? 'outcome window consumed by another tick; nothing counted here'
          : 'another tick committed first; expiries are decided again next tick';
      deps.log.info(what, {
        from: from.toISOString(),
        to: to.toISOString(),
      });
      return none();
    }
    if (retry === HEALTH_WRITE_RETRIES) {
      deps.log.warn('passive health writes kept losing to another pass; the window is read again next tick', {
        proxies: w.changed.map((c) => c.state.proxy),
        attempts: retry + 1,
      });
      return none();
    }
    // The same batches (the same signals) reduced again into the states as they are now.
    persisted.clear();
    ({ w, uncounted, deferred } = withinCap(
      await evaluate(deps, consumed, live, tracked, persisted, readMissing, now),
    ));
  }
  const { signals, suspects, decisions, changed } = w;
  for (const d of w.expired) {
    deps.log.info('passive evidence expired', {
      proxy: d.next.proxy,
      verdict: d.next.verdict,
      demoted: d.next.passive != null, // a SUSPECT track kept, AVAILABLE with its failures counted
    });
  }
  if (deferred.length > 0) {
    deps.log.info('passive expiries left for the next tick: more than a commit takes', {
      deferred: deferred.length,
      proxies: deferred.slice(0, LOGGED_UNCOUNTED),
    });
  }
  if (uncounted.length > 0) {
    deps.log.warn(
      'passive signals left uncounted: one batch changes more health states than a commit takes',
      {
        uncounted: uncounted.length,
        proxies: uncounted.slice(0, LOGGED_UNCOUNTED),
        through: through.toISOString(),
      },
    );
  }
  for (const s of w.failed) {
    deps.log.info('passive failure signal', {
      proxy: s.proxy,
      samples: s.samples,
      failureRatio: Number(s.failureRatio.toFixed(3)),
    });
  }
  // Logged once the window is counted (a conflicting tick counts nothing and says nothing): the alert
  // on this event points at the gateway, whose proxies were spared.
  for (const suspect of suspects) {
    deps.log.warn('gateway worker failed nearly every proxy it used; its outcomes were not counted', {
      event: 'passive.worker_suspect',
      ...suspect,
    });
  }
  for (const d of decisions.filter((x) => x.publish)) {
    deps.log.info('health transition', { proxy: d.next.proxy, verdict: d.next.verdict, source: 'passive' });
  }
  const transitions = await publishTransitions(deps, decisions, now, sent);
  return {
    outcomeBatches: consumed.length,
    passiveSignals: signals.filter((s) => live.has(s.proxy)).length,
    written: changed.length,
    transitions,
  };
}

/** Names logged when signals are left uncounted; the count is always complete. */
const LOGGED_UNCOUNTED = 50;

/**
 * At most PASSIVE_COMMIT_CAP changed states (Firestore refuses a commit of more than 500 writes, and a
 * commit that fails every tick would hold the cursor, and every later batch, until the expiry floor passes
 * the batch). Failed signals are kept first — they are what turns a proxy SUSPECT; a passing signal left
 * out only keeps a tracked proxy's evidence as it was, which the next window or the expiry settles. The
 * proxies left out keep their state and their place in `tracked` (a superset), and their signals of this
 * window are not counted: the cursor moves past them.
 */
/**
 * The changes one commit takes: failed signals first, then the other signals, then expiries. Signals left
 * out are lost (`uncounted`: the cursor moves past their batch); expiries left out are not (`deferred`:
 * still tracked, decided again next tick).
 */
function withinCap(w: Evaluation): { w: Evaluation; uncounted: string[]; deferred: string[] } {
  if (w.changed.length <= PASSIVE_COMMIT_CAP) return { w, uncounted: [], deferred: [] };
  const failed = new Set(w.failed.map((s) => s.proxy));
  const expiring = new Set(w.expired.map((d) => d.next.proxy));
  const rank = (proxy: string) => (failed.has(proxy) ? 0 : expiring.has(proxy) ? 2 : 1);
  const ordered = [0, 1, 2].flatMap((r) => w.changed.filter((c) => rank(c.state.proxy) === r));
  const left = new Set(ordered.slice(PASSIVE_COMMIT_CAP).map((c) => c.state.proxy));
  return {
    w: {
      ...w,
      failed: w.failed.filter((s) => !left.has(s.proxy)),
      decisions: w.decisions.filter((d) => !left.has(d.next.proxy)),
      expired: w.expired.filter((d) => !left.has(d.next.proxy)),
      changed: ordered.slice(0, PASSIVE_COMMIT_CAP),
    },
    uncounted: [...left].filter((p) => !expiring.has(p)).sort(),
    deferred: [...left].filter((p) => expiring.has(p)).sort(),
  };
}

interface Evaluation {
  signals: PassiveSignal[];
  /** Workers whose tallies were dropped for the window (workers/passive.ts). */
  suspects: SuspectWorker[];
  /** Failed signals of live proxies (logged once the window is final). */
  failed: PassiveSignal[];
  decisions: HealthDecision[];
  /** Those of `decisions` that expire the evidence of a tracked proxy without a signal (dropped, or a
   *  SUSPECT track demoted; logged). */
  expired: HealthDecision[];
  /** Tracked proxies without a signal whose stored state holds no PASSIVE track (the active pass dropped it,
   *  or there is no state): they leave the cursor's list, and are not read again. */
  untracked: string[];
  /** The changed states, each on top of the version it was decided on. */
  changed: HealthWrite[];
}

const sameSet = (a: ReadonlySet<string>, b: ReadonlySet<string>): boolean =>
  a.size === b.size && [...a].every((x) => b.has(x));

/** The decisions a window of batches leads to (reading the health states it needs that are not read yet). */
async function evaluate(
  deps: ProbeDeps,
  batches: readonly OutcomeBatchRecord[],
  live: ReadonlyMap<string, ProxyResource>,
  tracked: ReadonlySet<string>,
  persisted: ReadonlyMap<string, VersionedHealth>,
  readMissing: (names: string[]) => Promise<void>,
  now: Date,
): Promise<Evaluation> {
  const { passive } = deps;
  const { signals, suspects } = passiveSignals(batches, passive.rule);
  // A passing signal for a proxy without a PASSIVE track leaves it without one (presumed AVAILABLE): only
  // failures and tracked proxies need their state read, so a busy healthy fleet costs no health reads.
  const relevant = signals.filter((s) => live.has(s.proxy) && (!s.ok || tracked.has(s.proxy)));
  // The tracked proxies the window has no signal for (an UNHEALTHY one is out of the snapshots): their
  // evidence may have expired. A signal for a tracked proxy is always relevant, so none is decided twice.
  const signalled = new Set(signals.map((s) => s.proxy));
  const silent = [...tracked].filter((n) => live.has(n) && !signalled.has(n));
  await readMissing([...relevant.map((s) => s.proxy), ...silent]);
  // One signal (pass, fail, or none: only expiry to decide) reduced into the proxy's stored state.
  const decide = (state: ProxyHealthState, p: ProxyResource, instance: string, signal: boolean | null) =>
    decideHealth(
      state,
      p.name,
      instance,
      seedOf(p),
      [],
      activeTracksOf(deps.tiers),
      p.spec.healthCheck,
      now,
      {
        signal,
        settings: passive.settings,
      },
    );
  const decided = relevant.flatMap((s) => {
    const p = live.get(s.proxy)!;
    const read = persisted.get(s.proxy);
    const state = read?.state;
    // Gateways see only proxies that had an active verdict; without stored state there is nothing to refine
    // (and creating state here would cost writes for nothing). State of a replaced instance: the outcomes
    // may well be the old instance's, and decideHealth would start the new one's counters from them; the
    // active pass resets the state for the new instance first, and later windows count against that.
    const instance = healthInstanceKey(p);
    if (!read || !state || state.instance !== instance) return [];
    return [{ decision: decide(state, p, instance, s.ok), base: read.version }];
  });
  const untracked: string[] = [];
  const expired: Array<{ decision: HealthDecision; base: VersionedHealth['version'] }> = [];
  for (const name of silent) {
    const p = live.get(name)!;
    const read = persisted.get(name);
    const state = read?.state;
    if (!read || !state?.passive) {
      untracked.push(name);
      continue;
    }
    // Another instance's state (the VM replaced): the active pass resets it, as it does for a signal. No
    // longer tracked, it is not read every tick until then (up to an hour); a signal for the new instance
    // tracks it again.
    const instance = healthInstanceKey(p);
    if (state.instance !== instance) {
      untracked.push(name);
      continue;
    }
    const decision = decide(state, p, instance, null);
    // Only the expiry is this pass's business (a track dropped, or a SUSPECT one demoted: passive-track.ts):
    // evidence still fresh is left as it is (read again next tick, until it expires or the proxy gets a
    // signal: expiryMs of ticks at most).
    if (!samePassive(state.passive ?? null, decision.next.passive ?? null))
      expired.push({ decision, base: read.version });
  }
  const all = [...decided, ...expired];
  return {
    signals,
    suspects,
    failed: relevant.filter((x) => !x.ok),
    decisions: all.map((d) => d.decision),
    expired: expired.map((d) => d.decision),
    untracked,
    changed: all.filter((d) => d.decision.write).map((d) => ({ state: d.decision.next, base: d.base })),
  };
}
