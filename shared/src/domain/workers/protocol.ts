// Contract §7: registration carries supported_protocol_version; an incompatible worker is refused, never
// silently downgraded. Versions are integers; the controller speaks a closed range. A worker that speaks
// several offers its highest and steps down when refused (functions/gateway/src/control/registration.ts),
// and while below its highest offers it again now and then (control/protocol-upgrade.ts), so either side
// may be deployed first.
//
//   1  the contract as first published
//   2  snapshot entries may carry `filtersDestinations` (messages/gateway-snapshot.ts); version 1 does not
//      have the field (a worker built on its strict schema refuses an entry that carries it), so it is
//      written only for sessions of version 2 on
//   3  snapshot entries may carry `excludedRoutes` (a route whose target check fails through the proxy,
//      docs/health.md § TARGET); written only for sessions of version 3 on, for the same reason. A worker
//      of version 1 or 2 keeps such a proxy in every route it selects, as before the field
//   4  snapshot entries may have `protocol: "socks5"` (an external SOCKS5 upstream, docs/gateway.md
//      § SOCKS5 upstreams). A worker of version 1 to 3 refuses the enum value — and with it the whole
//      snapshot — so it is never given such a proxy: the planner leaves it out of the workers a SOCKS5
//      proxy may be assigned to, and the content builder never writes one for it either
//      (docs/gateway-control-plane.md § Protocol version)
//   5  snapshot entries may carry `suspect: true` (the proxy's health verdict is SUSPECT, docs/health.md);
//      written only for sessions of version 5 on. A worker of version 1 to 4 picks a suspect proxy like
//      any other, as before the field
//
// The contract's proto rules (§7: a field number is never reused; a deleted field stays `reserved`) in JSON
// terms: a field name of a worker body or a snapshot, once published, keeps its meaning for good — a field
// that is dropped is listed here as retired and its name is never given to anything else. Every schema is
// strict, so a new field is a new version above, written only for sessions that read it.
//   retired: (none yet)

export const ControllerProtocol = { min: 1, max: 5 } as const;

/** Whether a worker speaking `version` reads `filtersDestinations` in its snapshot entries. */
export const readsFiltersDestinations = (version: number): boolean => version >= 2;

/** Whether a worker speaking `version` reads `excludedRoutes` in its snapshot entries. */
export const readsExcludedRoutes = (version: number): boolean => version >= 3;

/** Whether a worker speaking `version` reads `protocol: "socks5"` in its snapshot entries. */
export const readsSocks5 = (version: number): boolean => version >= 4;

/** Whether a worker speaking `version` reads `suspect` in its snapshot entries. */
export const readsSuspect = (version: number): boolean => version >= 5;

/** The parts of a snapshot entry that only later versions read. */
export interface VersionedEntry {
  protocol: string;
  filtersDestinations?: boolean;
  excludedRoutes?: readonly string[];
  suspect?: boolean;
}

/**
 * Whether a worker speaking `version` can read every entry of a snapshot (its schema is strict: one entry
 * it cannot read refuses the whole snapshot). The snapshot pass never writes such an entry for a session
 * below its version; a stored snapshot can still be one built for the worker's previous, newer session (a
 * gateway rolled back under the same worker id), and the full-snapshot endpoint must not serve it.
 */
export const readableAt = (entries: readonly VersionedEntry[], version: number): boolean =>
  entries.every(
    (e) =>
      (e.protocol !== 'socks5' || readsSocks5(version)) &&
      (e.filtersDestinations === undefined || readsFiltersDestinations(version)) &&
      (e.excludedRoutes === undefined || readsExcludedRoutes(version)) &&
      (e.suspect === undefined || readsSuspect(version)),
  );

export type ProtocolCheck =
  | { ok: true; version: number }
  | { ok: false; error: 'unsupported_protocol_version' };

/** The worker sends the highest version it supports; we speak it if it is in our range. */
export function negotiateProtocol(supported: number): ProtocolCheck {
  if (
    !Number.isInteger(supported) ||
    supported < ControllerProtocol.min ||
    supported > ControllerProtocol.max
  ) {
    return { ok: false, error: 'unsupported_protocol_version' };
  }
  return { ok: true, version: supported };
}
