// The passive pass of a probe tick (contract §5 → §6): read the gateway outcome batches received since the
// cursor, turn them into one pass/fail signal per proxy (workers/passive.ts), reduce each into its proxy's
// PASSIVE track, and commit the changed health states together with the moved cursor — so each batch is
// counted once, whatever the duplicate or concurrent ticks (ports/passive-feed.ts; docs/health.md for the
// limits). One commit takes at most PASSIVE_COMMIT_CAP changed states (passive-window.ts).
// A window with no batch writes nothing: a fleet without gateway traffic still costs zero writes per tick.
import { healthInstanceKey } from '../../../shared/src/domain/health/instance-key.js';
import type { PassiveSettings } from '../../../shared/src/domain/health/passive-track.js';
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
import { PassiveFeedError, type PassiveFeedStore } from '../../../shared/src/ports/passive-feed.js';
import type { OutcomeBatchRecord, OutcomeReader } from '../../../shared/src/ports/workers.js';
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
  // after an outage, and the first run's window).
  const floor = to.getTime() - passive.settings.expiryMs;
  const from = new Date(Math.max(cursor?.through.getTime() ?? floor, floor));
  if (to <= from) return none();
  const batches = await passive.outcomes.between(from, to);
  if (batches.length === 0) return none();

  const live = new Map(all.filter((p) => p.status.ip && !p.deletionRequestedAt).map((p) => [p.name, p]));
  const tracked = new Set(cursor?.tracked ?? []);
  const persisted = new Map<string, ProxyHealthState>();
  const readMissing = async (names: string[]) => {
    const missing = names.filter((n) => !persisted.has(n));
    for (const [k, v] of await deps.health.getMany(missing)) persisted.set(k, v);
  };

  let consumed = batches;
  let through = to;
  let w = await evaluate(deps, consumed, live, tracked, persisted, readMissing, now);
  if (w.changed.length > PASSIVE_COMMIT_CAP) {
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
  const { signals, suspects, decisions, changed } = w;
  for (const s of w.failed) {
    deps.log.info('passive failure signal', {
      proxy: s.proxy,
      samples: s.samples,
      failureRatio: Number(s.failureRatio.toFixed(3)),
    });
  }
  for (const d of decisions) {
    if (d.next.passive) tracked.add(d.next.proxy);
    else tracked.delete(d.next.proxy);
  }
  for (const name of tracked) if (!live.has(name)) tracked.delete(name);
  try {
    await passive.feed.commit(changed, { through, tracked: [...tracked].sort() }, cursor?.token ?? null);
  } catch (err) {
    if (err instanceof PassiveFeedError && err.kind === 'conflict') {
      deps.log.info('outcome window consumed by another tick; nothing counted here', {
        from: from.toISOString(),
        to: to.toISOString(),
      });
      return none();
    }
    throw err;
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
  const transitions = await publishTransitions(deps, decisions, sent);
  return {
    outcomeBatches: consumed.length,
    passiveSignals: signals.filter((s) => live.has(s.proxy)).length,
    written: changed.length,
    transitions,
  };
}

interface Evaluation {
  signals: PassiveSignal[];
  /** Workers whose tallies were dropped for the window (workers/passive.ts). */
  suspects: SuspectWorker[];
  /** Failed signals of live proxies (logged once the window is final). */
  failed: PassiveSignal[];
  decisions: HealthDecision[];
  changed: ProxyHealthState[];
}

/** The decisions a window of batches leads to (reading the health states it needs that are not read yet). */
async function evaluate(
  deps: ProbeDeps,
  batches: readonly OutcomeBatchRecord[],
  live: ReadonlyMap<string, ProxyResource>,
  tracked: ReadonlySet<string>,
  persisted: ReadonlyMap<string, ProxyHealthState>,
  readMissing: (names: string[]) => Promise<void>,
  now: Date,
): Promise<Evaluation> {
  const { passive } = deps;
  const { signals, suspects } = passiveSignals(batches, passive.rule);
  // A passing signal for a proxy without a PASSIVE track leaves it without one (presumed AVAILABLE): only
  // failures and tracked proxies need their state read, so a busy healthy fleet costs no health reads.
  const relevant = signals.filter((s) => live.has(s.proxy) && (!s.ok || tracked.has(s.proxy)));
  await readMissing(relevant.map((s) => s.proxy));
  const decisions = relevant.flatMap((s) => {
    const p = live.get(s.proxy)!;
    const state = persisted.get(s.proxy);
    // Gateways see only proxies that had an active verdict; without stored state there is nothing to refine
    // (and creating state here would cost writes for nothing). State of a replaced instance: the outcomes
    // may well be the old instance's, and decideHealth would start the new one's counters from them; the
    // active pass resets the state for the new instance first, and later windows count against that.
    const instance = healthInstanceKey(p);
    if (!state || state.instance !== instance) return [];
    return [
      decideHealth(
        state,
        p.name,
        instance,
        seedOf(p),
        [],
        activeTracksOf(deps.tiers),
        p.spec.healthCheck,
        now,
        { signal: s.ok, settings: passive.settings },
      ),
    ];
  });
  return {
    signals,
    suspects,
    failed: relevant.filter((x) => !x.ok),
    decisions,
    changed: decisions.filter((d) => d.write).map((d) => d.next),
  };
}
