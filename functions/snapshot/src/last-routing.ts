// The routing a pass plans with when the stored one no longer fits the route schema (gatewayConfig/routing
// edited in the console): the routing the newest stored snapshot carries — the one a pass last published
// (every snapshot of a pass carries the same routing). Failing the pass instead renewed no grant: every
// gateway went stale within its max stale age (150 s) and the whole fleet stopped serving until someone
// fixed the document. Never the default routing: that would send every host through the default route's
// proxies, an unreviewed change of where the fleet's traffic goes. Read from the headers the pass has
// already read, not the snapshots' parts: a part torn by another pass's save, or out of shape, must not
// fail the very pass this keeps running.
import type { GatewayRoute } from '../../../shared/src/messages/gateway-snapshot.js';
import type { SnapshotHeader } from '../../../shared/src/ports/workers-snapshots.js';

export interface PublishedRouting {
  routes: GatewayRoute[];
  /** The stored snapshot it was read from. */
  snapshot: { workerId: string; version: number };
}

/**
 * The routing of the newest of `headers` that carries one, or null when none does: the only headers
 * stored are salvaged ones (their routing no longer fits either), or there are none at all.
 */
export function lastPublishedRouting(headers: ReadonlyMap<string, SnapshotHeader>): PublishedRouting | null {
  let newest: SnapshotHeader | null = null;
  for (const h of headers.values()) {
    if (h.salvaged || !h.routing) continue;
    if (!newest || h.generatedAt > newest.generatedAt) newest = h;
  }
  return newest?.routing
    ? { routes: newest.routing, snapshot: { workerId: newest.workerId, version: newest.version } }
    : null;
}
