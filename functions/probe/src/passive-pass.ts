// The passive pass of a probe tick (contract §5 → §6): read the gateway outcome batches received since the
// cursor, turn them into one pass/fail signal per proxy (workers/passive.ts), reduce each into its proxy's
// PASSIVE track, and commit the changed health states together with the moved cursor — so each batch is
// counted exactly once, whatever the duplicate or concurrent ticks (ports/passive-feed.ts).
// A window with no batch writes nothing: a fleet without gateway traffic still costs zero writes per tick.
import type { PassiveSettings } from '../../../shared/src/domain/health/passive-track.js';
import { decideHealth } from '../../../shared/src/domain/health/proxy-health.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import { type PassiveRule, passiveSignals } from '../../../shared/src/domain/workers/passive.js';
import { PassiveFeedError, type PassiveFeedStore } from '../../../shared/src/ports/passive-feed.js';
import type { OutcomeReader } from '../../../shared/src/ports/workers.js';
import { instanceOf, type ProbeDeps, publishTransitions, seedOf } from './probe-pass.js';

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

export async function runPassivePass(
  deps: ProbeDeps,
  all: ProxyResource[],
  now: Date,
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

  const signals = passiveSignals(
    batches.map((b) => b.tallies),
    passive.rule,
  );
  const live = new Map(all.filter((p) => p.status.ip && !p.deletionRequestedAt).map((p) => [p.name, p]));
  const tracked = new Set(cursor?.tracked ?? []);
  // A passing signal for a proxy without a PASSIVE track leaves it without one (presumed AVAILABLE): only
  // failures and tracked proxies need their state read, so a busy healthy fleet costs no health reads.
  const relevant = signals.filter((s) => live.has(s.proxy) && (!s.ok || tracked.has(s.proxy)));
  const persisted = await deps.health.getMany(relevant.map((s) => s.proxy));
  const decisions = relevant.flatMap((s) => {
    const p = live.get(s.proxy)!;
    const state = persisted.get(s.proxy);
    // Gateways see only proxies that had an active verdict; without stored state there is nothing to refine
    // (and creating state here would cost writes for nothing).
    if (!state) return [];
    return [
      decideHealth(state, p.name, instanceOf(p), seedOf(p), [], p.spec.healthCheck, now, {
        signal: s.ok,
        settings: passive.settings,
      }),
    ];
  });
  for (const s of relevant.filter((x) => !x.ok)) {
    deps.log.info('passive failure signal', {
      proxy: s.proxy,
      samples: s.samples,
      failureRatio: Number(s.failureRatio.toFixed(3)),
    });
  }
  const changed = decisions.filter((d) => d.write).map((d) => d.next);
  for (const d of decisions) {
    if (d.next.passive) tracked.add(d.next.proxy);
    else tracked.delete(d.next.proxy);
  }
  for (const name of tracked) if (!live.has(name)) tracked.delete(name);
  try {
    await passive.feed.commit(changed, { through: to, tracked: [...tracked].sort() }, cursor?.token ?? null);
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
  for (const d of decisions.filter((x) => x.publish)) {
    deps.log.info('health transition', { proxy: d.next.proxy, verdict: d.next.verdict, source: 'passive' });
  }
  const transitions = await publishTransitions(deps, decisions);
  return {
    outcomeBatches: batches.length,
    passiveSignals: signals.filter((s) => live.has(s.proxy)).length,
    written: changed.length,
    transitions,
  };
}
