// Runs a TypeScript entry point of this repo as one plain JavaScript file, for the processes the local
// plane and the tests start (functions, the API, the gateway). Under `--import tsx` every module a process
// loads — the SDKs' hundreds included — passes through loader hooks that Node 20 runs on a separate
// thread, one synchronous round trip each: about 2 s of CPU per start of a function, twice what the
// same start costs as a bundle. esbuild bundles our own modules into one file and leaves npm packages as
// imports (loaded by Node as they would be from tsc's output, which is what deploys).
//
// Semantics are the source's: each bundled module's `import.meta.url` (and dirname and filename) is
// its own source file's, so paths resolved from it (shared/topology/*.json, the preloads beside the
// launcher, repoRoot) and `createRequire(import.meta.url)` are unchanged. Stack traces name the bundle's
// lines (esbuild keeps names, and marks where each source file starts); the bundle carries an inline
// source map, so NODE_OPTIONS=--enable-source-maps (which children inherit) maps them back to the .ts
// files. Not on by default: the Firestore client captures a stack trace at every commit, and mapping
// each one was once the largest cost of a lease request in the API's profile (docs/leases.md).
//
// A bundle is built once per process and entry, and again when one of its inputs has changed since
// (checked by mtime at each start: a long-lived runner sees edits). Bundles are written under
// node_modules/.cache/proxyplane/entries/, named by their content: concurrent runners writing the same
// bundle write the same bytes, each through its own temporary file and a rename. Writing one removes
// the entry's bundles (and abandoned temporary files) last written over an hour before: a process is
// started within seconds of its bundle being written, and a bundle still in use is rewritten, newly
// dated, by every build that produces it.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { repoRoot } from '../../shared/src/config/local-ports.js';

export const BUNDLE_DIR = join(repoRoot, 'node_modules', '.cache', 'proxyplane', 'entries');

interface Built {
  file: string;
  /** Every source file the bundle holds, with its mtime when it was read. */
  inputs: Array<[string, number]>;
}

const built = new Map<string, Promise<Built>>();

const mtime = (file: string): number => {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return -1;
  }
};

const NODE_MODULES = `${sep}node_modules${sep}`;
const META = /\bimport\.meta\.(url|dirname|filename)\b/g;

/** Replaces each module's import.meta.url/dirname/filename with its source file's, as literals. */
const sourceLocations: Plugin = {
  name: 'source-locations',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?[jt]s$/ }, (args) => {
      if (args.path.includes(NODE_MODULES)) return undefined;
      const text = readFileSync(args.path, 'utf8');
      const values = {
        url: pathToFileURL(args.path).href,
        dirname: dirname(args.path),
        filename: args.path,
      };
      return {
        contents: text.replace(META, (_m, key: keyof typeof values) => JSON.stringify(values[key])),
        loader: /\.[cm]?ts$/.test(args.path) ? 'ts' : 'js',
      };
    });
  },
};

const STALE_MS = 60 * 60 * 1000;

/** Removes the bundles named `prefix…` and the temporary files last written over STALE_MS ago. */
function removeStale(prefix: string): void {
  const before = Date.now() - STALE_MS;
  for (const name of readdirSync(BUNDLE_DIR)) {
    if (!name.startsWith(prefix) && !name.endsWith('.tmp')) continue;
    const path = join(BUNDLE_DIR, name);
    if (mtime(path) >= 0 && mtime(path) < before) rmSync(path, { force: true });
  }
}

async function bundle(entry: string): Promise<Built> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    write: false,
    metafile: true,
    sourcemap: 'inline',
    sourceRoot: repoRoot,
    logLevel: 'silent',
    plugins: [sourceLocations],
  });
  const code = result.outputFiles[0]?.contents;
  if (!code) throw new Error(`bundling ${entry} produced nothing`);
  const digest = createHash('sha256').update(code).digest('hex').slice(0, 16);
  const name = relative(repoRoot, entry)
    .replace(/[/\\]/g, '_')
    .replace(/\.[cm]?ts$/, '');
  mkdirSync(BUNDLE_DIR, { recursive: true });
  const file = join(BUNDLE_DIR, `${name}-${digest}.mjs`);
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, code);
  renameSync(tmp, file);
  removeStale(`${name}-`);
  const inputs = Object.keys(result.metafile.inputs)
    .map((p) => join(repoRoot, p))
    .filter((p) => !p.includes(NODE_MODULES))
    .map((p): [string, number] => [p, mtime(p)]);
  return { file, inputs };
}

/** The path of a bundle of `entry` (an absolute .ts path) as its sources stand now. */
export async function bundledEntry(entry: string): Promise<string> {
  const cached = built.get(entry);
  if (cached) {
    const current = await cached.catch(() => undefined);
    if (current?.inputs.every(([file, at]) => mtime(file) === at)) return current.file;
  }
  const next = bundle(entry);
  built.set(entry, next);
  next.catch(() => built.delete(entry));
  return (await next).file;
}
