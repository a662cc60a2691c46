// `proxies apply` of a file saved from the API's output (`proxies get NAME -o yaml`, then edited): the file
// says which proxy it was saved from (`uid`) and at which spec generation (`generation`). Applying it over
// a proxy that has changed since would silently undo that change, so apply refuses, as kubectl refuses an
// apply whose resourceVersion is not the stored one; and its PUT carries `If-Match` of the file's
// generation (docs/api.md "Conditional requests"), so a change between apply's read and its write is
// refused by the API too. A proxy deleted since is such a change: applying the file would create it again
// (a new VM, leasable at once), so apply refuses that too and `proxies create -f` is the way to do it on
// purpose. A file without them (written by hand) applies over whatever is stored, or creates the proxy.
import { isDeepStrictEqual } from 'node:util';
import { StaleFileError } from './errors.js';
import type { SavedFrom } from './proxy-file.js';

/**
 * Why the stored proxy (null: none of that name) is not the one the file was saved from, as it was then;
 * null when it is — or when its spec is the file's `spec` by now (the file applied already, its answer
 * lost: applied again it converges, `unchanged`, rather than being refused for its own change).
 */
export function staleness(
  name: string,
  savedFrom: SavedFrom,
  stored: { uid?: string; generation: number; spec?: unknown } | null,
  spec?: unknown,
): string | null {
  if (stored === null) {
    if (savedFrom.uid === undefined && savedFrom.generation === undefined) return null;
    return `proxy/${name} does not exist: deleted since the file was saved, or renamed in it? \`proxies create -f\` the file to create it`;
  }
  if (savedFrom.uid !== undefined && stored.uid !== undefined && savedFrom.uid !== stored.uid) {
    return `proxy/${name} is not the proxy the file was saved from (uid ${stored.uid}, the file's ${savedFrom.uid}): deleted and created again since?`;
  }
  const saved = savedFrom.generation;
  if (saved === undefined || saved === stored.generation) return null;
  if (spec !== undefined && isDeepStrictEqual(stored.spec, spec)) return null;
  const since = stored.generation > saved ? ': its spec changed since' : '';
  return `proxy/${name} is at generation ${stored.generation}, the file was saved at generation ${saved}${since}`;
}

/**
 * The error for `problems` (each "WHERE: why") found in `what` (the file, or one proxy of it), `nothing`
 * saying what was not written.
 */
export function staleFileError(what: string, problems: string[], nothing: string): StaleFileError {
  return new StaleFileError(
    `${what} was saved before the stored proxy's latest change; ${nothing} — \`proxies get\` it again and redo the edit, or delete \`generation\` and \`uid\` from the file to apply it over the stored spec`,
    problems,
  );
}
