// The proxy spec's schema is strict, so that the API refuses a field it does not know. Two readers must
// not refuse what a newer release wrote: a stored document (every release writes its defaulted fields
// into each spec) and a file a newer API printed for the CLI to apply. Both read such a value as this
// release knows it: the spec's unknown fields left out, everything else checked as ever.
import type { z } from 'zod';

/**
 * `root` (not changed) with `keys` left out of the object at `path`: copied along the path only, through
 * arrays too (an issue's path names an element by its index).
 */
function omitAt(root: unknown, path: readonly PropertyKey[], keys: readonly PropertyKey[]): unknown {
  if (root === null || typeof root !== 'object') return root;
  if (path.length === 0)
    return Array.isArray(root)
      ? root
      : Object.fromEntries(Object.entries(root).filter(([k]) => !keys.includes(k)));
  const [head, ...rest] = path as [PropertyKey, ...PropertyKey[]];
  if (Array.isArray(root)) return root.map((v, i) => (i === Number(head) ? omitAt(v, rest, keys) : v));
  const record = root as Record<PropertyKey, unknown>;
  return { ...record, [head]: omitAt(record[head], rest, keys) };
}

/** The value at `path` in `root`, undefined where the path cannot be followed. */
const at = (root: unknown, path: readonly PropertyKey[]): unknown =>
  path.reduce<unknown>(
    (v, k) => (v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined),
    root,
  );

/**
 * `schema.safeParse(value)`, with the fields it does not know under `value.spec` (at any depth) left out
 * of what is read. Each round leaves out those the last parse named (at least one, so it ends); it stops
 * when none is named, or none named is there to leave out (the schema's issue then stands).
 */
export function parseWithoutUnknownSpecFields<S extends z.ZodType>(
  schema: S,
  value: unknown,
): z.ZodSafeParseResult<z.output<S>> {
  let read = value;
  for (;;) {
    const parsed = schema.safeParse(read);
    if (parsed.success) return parsed;
    const present = parsed.error.issues.flatMap((i) => {
      if (i.code !== 'unrecognized_keys' || i.path[0] !== 'spec') return [];
      const object = at(read, i.path);
      const keys =
        object !== null && typeof object === 'object' ? i.keys.filter((k) => Object.hasOwn(object, k)) : [];
      return keys.length > 0 ? [{ path: i.path, keys }] : [];
    });
    if (present.length === 0) return parsed;
    const next = present.reduce<unknown>((v, { path, keys }) => omitAt(v, path, keys), read);
    // A round that left nothing out (a path omitAt cannot follow) would only repeat: the issue stands.
    if (present.every(({ path, keys }) => keys.every((k) => Object.hasOwn(at(next, path) ?? {}, k))))
      return parsed;
    read = next;
  }
}
