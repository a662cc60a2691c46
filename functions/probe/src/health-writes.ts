// How the active pass stores its decisions when another pass may write the same proxies meanwhile (an
// invocation whose active passes run past the next tick overlaps the next invocation's passes): each state
// is written on top of the version it was decided on, and one that lost the race is decided again — the
// pure reducer on the fresh state, with the same probe results, nothing probed again — a bounded number of
// times. Then it is left to the next tick, which decides from whatever is stored (docs/health.md
// § Overlapping ticks). The passive pass commits with its cursor, all or nothing, and retries the same
// way within its own commit (passive-pass.ts), bounded by the same HEALTH_WRITE_RETRIES.
import { loggedProxies } from '../../../shared/src/adapters/log/logged-proxies.js';
import type { HealthDecision, ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import type {
  HealthStore,
  HealthVersion,
  HealthWriteResult,
  VersionedHealth,
} from '../../../shared/src/ports/health-store.js';
import type { ProbeLog } from './probe-pass.js';

/**
 * Proxies an error message, or the line of writes that failed part-way, names at most: a failed batch
 * may hold a whole pass.
 */
const NAMED_IN_ERROR = 10;

/** `a, b` — or, past NAMED_IN_ERROR, `12000 proxies: a, b, … and 11990 more`. */
function namedInError(names: readonly string[]): string {
  if (names.length <= NAMED_IN_ERROR) return names.join(', ');
  const first = names.slice(0, NAMED_IN_ERROR).join(', ');
  return `${names.length} proxies: ${first} and ${names.length - NAMED_IN_ERROR} more`;
}

/** Times a pass decides again and rewrites a proxy whose write lost a race, before leaving it. */
export const HEALTH_WRITE_RETRIES = 3;

export interface Decided<D extends HealthDecision> {
  decision: D;
  /** The version the decision was made on (null: no stored state). */
  base: HealthVersion | null;
  /** The same decision on another state (null: none stored), with the same inputs: the pure reducer again. */
  redecide(fresh: ProxyHealthState | null): D;
}

export interface Stored<D extends HealthDecision> {
  /** The decisions that hold: written, or with nothing to write. Those left after the retries are not
   *  among them (their transitions are not published: what is stored is another pass's). */
  decisions: D[];
  written: number;
}

/**
 * Writes the decisions that changed a state, each on top of its base. The ones that lost a race are read
 * again and decided again on the fresh state (`redecide`) up to HEALTH_WRITE_RETRIES times; one still
 * losing after that is logged at WARNING and left as stored. Never throws for contention.
 *
 * Throws when the store fails before any decision was written: the run is recorded failed at this pass,
 * and the next one probes its window again. Once one has been written it does not throw: probed again,
 * what landed would be counted twice (a failing proxy at its threshold an interval early) — the decisions
 * the store failed keep their stored state, logged at WARNING, and wait for their next slot, like a
 * proxy left undecided at the pass budget.
 */
export async function storeDecisions<D extends HealthDecision>(
  deps: { health: HealthStore; log: ProbeLog },
  decided: Decided<D>[],
): Promise<Stored<D>> {
  const decisions = decided.filter((d) => !d.decision.write).map((d) => d.decision);
  let todo = decided.filter((d) => d.decision.write);
  let written = 0;
  const unstored: string[] = [];
  /** After a write has landed, a store failure leaves `names` to their next slot instead of throwing. */
  const leave = (names: string[], err: unknown): void => {
    if (written === 0) throw err;
    unstored.push(...names);
  };
  for (let retry = 0; todo.length > 0; retry++) {
    let results: HealthWriteResult[];
    try {
      results = await deps.health.writeMany(todo.map((d) => ({ state: d.decision.next, base: d.base })));
    } catch (err) {
      leave(
        todo.map((d) => d.decision.next.proxy),
        err,
      );
      break;
    }
    const lost: Decided<D>[] = [];
    const failed: string[] = [];
    todo.forEach((d, i) => {
      if (results[i] === 'written') {
        decisions.push(d.decision);
        written++;
      } else if (results[i] === 'failed') failed.push(d.decision.next.proxy);
      else lost.push(d);
    });
    if (failed.length > 0) leave(failed, new Error(`health writes failed for ${namedInError(failed)}`));
    if (lost.length === 0) break;
    const names = lost.map((d) => d.decision.next.proxy);
    if (retry === HEALTH_WRITE_RETRIES) {
      deps.log.warn('health writes kept losing to another pass; left to the next tick', {
        ...loggedProxies(names),
        attempts: retry + 1,
      });
      break;
    }
    let fresh: Map<string, VersionedHealth>;
    try {
      fresh = await deps.health.getMany(names);
    } catch (err) {
      leave(names, err);
      break;
    }
    todo = [];
    for (const d of lost) {
      const read = fresh.get(d.decision.next.proxy);
      const decision = d.redecide(read?.state ?? null);
      if (decision.write) todo.push({ ...d, decision, base: read?.version ?? null });
      else decisions.push(decision);
    }
  }
  if (unstored.length > 0)
    deps.log.warn(
      'health writes failed after others of the pass landed; left to their next slot',
      loggedProxies(unstored, NAMED_IN_ERROR),
    );
  return { decisions, written };
}
