// JSON Merge Patch, RFC 7396 §2: objects merge recursively, null removes a member, anything else
// (arrays included) replaces. Results are built with Object.fromEntries, which defines own properties, so
// even a `__proto__` member could never reach a prototype (json-guard refuses such keys earlier anyway).
const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const members = new Map<string, unknown>(isObject(target) ? Object.entries(target) : []);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) members.delete(key);
    else members.set(key, mergePatch(members.get(key), value));
  }
  return Object.fromEntries(members);
}
