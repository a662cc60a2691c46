// The package-lock.json of one deployable unit: the repo's own lockfile cut down to the packages the
// unit's dependencies reach, at the same paths and versions. With it Cloud Build (`npm ci`, which the
// Node.js buildpack runs when a lockfile is present) and the image build install exactly the tree the
// tests ran against, down to every transitive package and its integrity hash — not whatever the registry
// resolves on the day of the deploy.

/** One entry of a lockfile v2/v3 `packages` map (only what this reads; the rest is carried over as is). */
interface LockEntry {
  version?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  dev?: boolean;
  devOptional?: boolean;
  optional?: boolean;
  link?: boolean;
  [field: string]: unknown;
}

export interface Lockfile {
  name?: string;
  version?: string;
  lockfileVersion: number;
  requires?: boolean;
  packages: Record<string, LockEntry>;
}

/**
 * Where Node (and npm) find `name` from the package installed at `from` ('' = the root): its own
 * node_modules first, then each enclosing node_modules up to the root's.
 */
export function resolveFrom(packages: Lockfile['packages'], from: string, name: string): string | null {
  let base = from;
  for (;;) {
    const candidate = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
    if (candidate in packages) return candidate;
    if (base === '') return null;
    const up = base.lastIndexOf('/node_modules/');
    base = up === -1 ? '' : base.slice(0, up);
  }
}

/**
 * The repo lock's paths `roots` reach (from the root) through dependencies and required peers, and
 * through optional dependencies too when `withOptional`. npm installs required peers itself; an optional
 * peer only when something else asks for it, which then brings it by that path.
 */
function reach(repo: Lockfile, name: string, roots: readonly string[], withOptional: boolean): Set<string> {
  const seen = new Set<string>();
  const pending = roots.map((dep) => ({ from: '', dep, required: true }));
  while (pending.length > 0) {
    const { from, dep, required } = pending.pop()!;
    const path = resolveFrom(repo.packages, from, dep);
    if (path === null) {
      if (required) throw new Error(`${name}: package-lock.json has no ${dep} for ${from || 'the root'}`);
      continue;
    }
    if (seen.has(path)) continue;
    seen.add(path);
    const entry = repo.packages[path]!;
    if (entry.link) throw new Error(`${name}: ${path} is a link (a workspace): not deployable`);
    for (const d of Object.keys(entry.dependencies ?? {}))
      pending.push({ from: path, dep: d, required: true });
    if (withOptional) {
      // Installed when the platform allows (the lock keeps every platform's; npm ci skips the others).
      for (const d of Object.keys(entry.optionalDependencies ?? {})) {
        pending.push({ from: path, dep: d, required: false });
      }
    }
    for (const d of Object.keys(entry.peerDependencies ?? {})) {
      if (entry.peerDependenciesMeta?.[d]?.optional !== true)
        pending.push({ from: path, dep: d, required: true });
    }
  }
  return seen;
}

/**
 * The lockfile of a package named `name` whose package.json lists exactly `dependencies` (names → the
 * exact versions the repo has installed): the repo lock's entries those reach through dependencies,
 * optional dependencies and required peers, unchanged but for their flags: none is `dev` (nothing in it
 * is a dev dependency of the unit), and `optional` says whether the unit reaches it through optional
 * edges only. A required dependency the repo lock does not hold, or holds at another version than the one
 * asked for at the top, is an error: the unit could not be installed as tested.
 */
export function prunedLockfile(repo: Lockfile, name: string, dependencies: Record<string, string>): Lockfile {
  if (repo.lockfileVersion < 2)
    throw new Error(`package-lock.json v${repo.lockfileVersion}: v2 or later needed`);
  for (const [dep, version] of Object.entries(dependencies)) {
    const at = repo.packages[`node_modules/${dep}`];
    if (at?.version !== version) {
      throw new Error(
        `${name}: ${dep}@${version} is not what package-lock.json installs (${at?.version ?? 'none'})`,
      );
    }
  }
  // The flags are the unit's, not the repo's: a package the repo needs (no flag) may be reached in the
  // unit only through optional edges, where npm ci must be free to skip it (another platform's binary).
  const reached = reach(repo, name, Object.keys(dependencies), true);
  const required = reach(repo, name, Object.keys(dependencies), false);
  const kept = new Map<string, LockEntry>();
  for (const path of reached) {
    const { dev: _dev, devOptional: _devOptional, optional: _optional, ...rest } = repo.packages[path]!;
    kept.set(path, required.has(path) ? rest : { ...rest, optional: true });
  }
  const sorted = [...kept.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    name,
    lockfileVersion: repo.lockfileVersion,
    requires: true,
    packages: { '': { name, dependencies: { ...dependencies } }, ...Object.fromEntries(sorted) },
  };
}
