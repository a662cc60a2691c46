// How PUT and PATCH turn the current spec into the next one. Both refuse to change what names the
// instance's place rather than its shape, and PATCH re-validates the merged result in full, so a patch can
// never produce a spec that POST would have refused:
// - `mode`: managed ↔ external is a different resource.
// - `provider`: reconcile observes and deletes an instance through the spec's provider, so a new one would
//   never see (nor delete) the instance the old one made.
// - `zone` (managed): a zone change would be a replacement, but instance names are per zone: a create
//   that landed in the old zone just before a crash (no providerId stored yet) would stay there beside the
//   new one, and the GC keeps it because its UID is live — two instances for one proxy (brief, invariant
//   1). Moving a proxy is creating one in the other zone and deleting this one.
// Every other managed field (machineType, image, port, protocol, cloudInit, credentialsRef, and connectPorts
// through the default cloud-init it renders) enters the spec hash, and reconcile replaces the instance in
// place (same zone, same deterministic name).
import { connectPortsAllowed } from '../../../../shared/src/domain/cloud-init/squid-conf.js';
import { type ProxySpec, ProxySpec as ProxySpecSchema } from '../../../../shared/src/domain/proxy.js';
import { ApiError, invalidRequest } from '../errors.js';
import { toIssues } from '../validation/issues.js';
import { mergePatch } from '../validation/merge-patch.js';

export type SpecChange = (current: ProxySpec) => ProxySpec;

const REMEDY = 'create a new proxy and delete this one';

function immutable(issues: Array<{ path: string; was: unknown }>): ApiError {
  const list = issues.map(({ path, was }) => {
    const message = `${path} is immutable (it is ${JSON.stringify(was)}); ${REMEDY}`;
    return { path, code: 'immutable_field', message };
  });
  return new ApiError(400, 'immutable_field', list[0]!.message, { issues: list });
}

/** Before validation: a spec of another mode would otherwise fail on the other mode's fields first. */
function assertSameMode(current: ProxySpec, nextMode: unknown): void {
  if (nextMode !== current.mode) throw immutable([{ path: 'mode', was: current.mode }]);
}

/** After validation (defaults applied): a PATCH that removes `provider` means the default, 'gce'. */
function assertImmutables(current: ProxySpec, next: ProxySpec): void {
  assertSameMode(current, next.mode);
  if (current.mode !== 'managed' || next.mode !== 'managed') return;
  const changed = (['provider', 'zone'] as const)
    .filter((k) => current[k] !== next[k])
    .map((k) => ({ path: k, was: current[k] }));
  if (changed.length > 0) throw immutable(changed);
}

/** PUT: the body (already validated, defaults applied) is the next spec. */
export const replaceWith =
  (next: ProxySpec): SpecChange =>
  (current) => {
    assertImmutables(current, next);
    return next;
  };

/** PATCH: RFC 7396 merge of the body into the current spec, then the full ProxySpec validation. */
export const mergeWith =
  (patch: Record<string, unknown>): SpecChange =>
  (current) => {
    const merged = mergePatch(current, patch) as Record<string, unknown>;
    assertSameMode(current, merged.mode);
    const parsed = ProxySpecSchema.safeParse(merged);
    if (!parsed.success) throw invalidRequest('the patched spec is invalid', toIssues(parsed.error));
    assertImmutables(current, parsed.data);
    return parsed.data;
  };

/**
 * Key-order-insensitive comparison: a PUT of the same spec in another key order is not a change, nor is
 * spelling out what an absent field means (`healthCheck.exitIp: "proxy"`, `connectPorts: [443]`) or
 * listing the same ports another way: each would bump the generation and send reconcile a change that
 * changes nothing.
 */
export function sameSpec(a: ProxySpec, b: ProxySpec): boolean {
  return canonical(meaning(a)) === canonical(meaning(b));
}

/** The spec with each setting in one spelling of what it does. */
function meaning(spec: ProxySpec): ProxySpec {
  let out = spec;
  if (out.healthCheck.exitIp === 'proxy') {
    const { exitIp: _default, ...healthCheck } = out.healthCheck;
    out = { ...out, healthCheck };
  }
  // The ports the default cloud-init lets CONNECT reach: absent, [443] and [443, 443] are one setting,
  // [8443] and [8443, 443] another (squid-conf.ts renders the same line for each).
  if (out.mode === 'managed') out = { ...out, connectPorts: connectPortsAllowed(out.connectPorts) };
  return out;
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
