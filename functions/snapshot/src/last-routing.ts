// The routing a pass plans with when the stored one no longer fits the route schema (gatewayConfig/routing
// edited in the console): the routing the newest stored snapshot carries — the one a pass last published
// (every snapshot of a pass carries the same routing). Failing the pass instead renewed no grant: every
// gateway went stale within its max stale age (150 s) and the whole fleet stopped serving until someone
// fixed the document. Never the default routing: that would send every host through the default route's
// proxies, an unreviewed change of where the fleet's traffic goes.
import type { GatewayRoute } from '../../../shared/src/messages/gateway-snapshot.js';
import type { SnapshotHeader, SnapshotStore } from '../../../shared/src/ports/workers-snapshots.js';

export interface PublishedRouting {
  routes: GatewayRoute[];
  /** The stored snapshot it was read from. */
  snapshot: { workerId: string; version: number };
}

/**
 * The routing of the newest of `headers`' snapshots that can still be read, or null when none can: the
 * only snapshots stored are salvaged headers (their routing no longer fits either), swept, or none at all.
 */
export async function lastPublishedRouting(
  snapshots: Pick<SnapshotStore, 'loadFull'>,
  headers: ReadonlyMap<string, SnapshotHeader>,
): Promise<PublishedRouting | null> {
  const newestFirst = [...headers.values()]
    .filter((h) => !h.salvaged)
    .sort((a, b) => b.generatedAt.getTime() - a.generatedAt.getTime());
  for (const h of newestFirst) {
    // Usually the first: a live worker's snapshot is renewed every few passes, and only one whose grant
    // ended a day or more ago has its parts swept (sweep.ts).
    const full = await snapshots.loadFull(h.workerId);
    if (full) return { routes: full.routing, snapshot: { workerId: h.workerId, version: full.version } };
  }
  return null;
}
