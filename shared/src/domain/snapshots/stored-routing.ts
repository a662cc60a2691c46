// A stored routing that no longer fits the wire schema only because two routes share a name (the admin
// API accepted that before it checked): the pass must not fail on it forever — a failing pass renews no
// grant, so every worker would go stale — nor publish it, since every worker refuses it. It keeps the
// first route of each name and drops the later ones, and says which, so the pass can log it. The first
// is the one that already wins (routes are matched in order, first match wins); a later one of the same
// name only ever caught the hosts the earlier ones did not. The fix is a PUT of a corrected routing.
import type { RoutingRule } from '../../messages/gateway-snapshot.js';

export interface UsableRouting {
  routes: RoutingRule[];
  /** The names of the routes dropped because an earlier route has the same name, in stored order. */
  droppedDuplicates: string[];
}

export function firstOfEachName(routes: readonly RoutingRule[]): UsableRouting {
  const seen = new Set<string>();
  const kept: RoutingRule[] = [];
  const droppedDuplicates: string[] = [];
  for (const r of routes) {
    if (seen.has(r.name)) droppedDuplicates.push(r.name);
    else {
      seen.add(r.name);
      kept.push(r);
    }
  }
  return { routes: kept, droppedDuplicates };
}
