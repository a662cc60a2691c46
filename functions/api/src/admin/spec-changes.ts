// How PUT and PATCH turn the current spec into the next one. Both refuse to change `mode` (managed ↔
// external is a different resource: delete and recreate), and PATCH re-validates the merged result in
// full, so a patch can never produce a spec that POST would have refused.
import { type ProxySpec, ProxySpec as ProxySpecSchema } from '../../../../shared/src/domain/proxy.js';
import { ApiError, invalidRequest } from '../errors.js';
import { toIssues } from '../validation/issues.js';
import { mergePatch } from '../validation/merge-patch.js';

export type SpecChange = (current: ProxySpec) => ProxySpec;

function assertSameMode(current: ProxySpec, nextMode: unknown): void {
  if (nextMode === current.mode) return;
  const message = `mode is immutable (it is "${current.mode}"); delete the proxy and create it again`;
  throw new ApiError(400, 'immutable_field', message, {
    issues: [{ path: 'mode', code: 'immutable_field', message }],
  });
}

/** PUT: the body (already validated, defaults applied) is the next spec. */
export const replaceWith =
  (next: ProxySpec): SpecChange =>
  (current) => {
    assertSameMode(current, next.mode);
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
    return parsed.data;
  };

/** Key-order-insensitive comparison: a PUT of the same spec in another key order is not a change. */
export function sameSpec(a: ProxySpec, b: ProxySpec): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
