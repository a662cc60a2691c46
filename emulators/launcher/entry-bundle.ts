// Runs a TypeScript entry point of this repo as plain JavaScript, for the processes the local plane and
// the tests start (functions, the API, the gateway). Under `--import tsx` every module a process loads —
// the SDKs' hundreds included — passes through loader hooks that Node 20 runs on a separate thread, one
// synchronous round trip each: about 2 s of CPU per start of a function, twice what the same start
// costs bundled. esbuild bundles our own modules and leaves npm packages as imports (loaded by Node as
// they are from tsc's output, which is what deploys).
//
// Semantics are the source's: each bundled module's `import.meta.url` (and dirname and filename) is its
// own source file's, so paths resolved from it (shared/topology/*.json, the preloads beside the launcher,
// repoRoot) and `createRequire(import.meta.url)` are unchanged; names are kept (`keepNames`: an error
// class's `name`, a function's in a stack trace); a dynamic import() stays lazy (`splitting`: the
// gateway loads its controller's SDKs only in controller mode). One difference remains: ESM evaluates a
// file's imports before its body, so the packages a bundle imports load before any of its own modules
// runs (the gateway's malloc-thresholds.ts drops its block after them, still long before a tunnel).
// Stack traces name the bundle's lines; the bundle carries an inline source map, so
// NODE_OPTIONS=--enable-source-maps (which children inherit) maps them back to the .ts files. Not on by
// default: the Firestore client captures a stack trace at every commit, and mapping each one was once
// the largest cost of a lease request in the API's profile (docs/leases.md).
//
// A bundle is built once per process and entry, and again when one of its sources has changed since it
// was read (by mtime, checked at each start: a long-lived runner sees edits). Bundles are folders under
// node_modules/.cache/proxyplane/entries/, named by their content: a runner writes one into a temporary
// folder and renames it into place, and a runner that finds it there already (the same bytes) keeps
// that one. Writing or reusing one dates it anew and removes the entry's bundles (and abandoned
// temporary folders) last dated over an hour before: a process starts within seconds of its bundle being
// dated, so an hour-old one is no one's.
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { repoRoot } from '../../shared/src/config/local-ports.js';

export const BUNDLE_DIR = join(repoRoot, 'node_modules', '.cache', 'proxyplane', 'entries');
const STALE_MS = 60 * 60 * 1000;
const NODE_MODULES = `${sep}node_modules${sep}`;
const META = /\bimport\.meta\.(url|dirname|filename)\b/g;

interface Built {
  /** The entry's JavaScript file, in `folder` with the chunks it imports. */
  file: string;
  folder: string;
  /** Every file of the bundle: a folder missing one is not reused. */
  files: string[];
  /** Every source file of ours the bundle holds, with its mtime as it was read. */
  inputs: Map<string, number>;
}

const built = new Map<string, Promise<Built>>();

const mtime = (file: string): number => {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return -1;
  }
};

/**
 * Replaces each of our modules' import.meta.url/dirname/filename with its source file's, as literals,
 * and records each file's mtime before reading it (an edit saved meanwhile is seen at the next start).
 */
const sourceLocations = (inputs: Map<string, number>): Plugin => ({
  name: 'source-locations',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?[jt]s$/ }, (args) => {
      if (args.path.includes(NODE_MODULES)) return undefined;
      inputs.set(args.path, mtime(args.path));
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
});

/** Folder names of `name`'s bundles, and the temporary folders any runner leaves behind if it dies. */
const ownBundle = (name: string) =>
  new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-[0-9a-f]{16}$`);
const temporary = /\.tmp$/;

function removeStale(name: string): void {
  const before = Date.now() - STALE_MS;
  const own = ownBundle(name);
  for (const entry of readdirSync(BUNDLE_DIR)) {
    if (!own.test(entry) && !temporary.test(entry)) continue;
    const path = join(BUNDLE_DIR, entry);
    const at = mtime(path);
    if (at >= 0 && at < before) rmSync(path, { recursive: true, force: true });
  }
}

async function bundle(entry: string): Promise<Built> {
  const inputs = new Map<string, number>();
  const name = relative(repoRoot, entry)
    .replace(/[/\\]/g, '_')
    .replace(/\.[cm]?ts$/, '');
  // Output paths are computed against this folder; the files are written below under their own.
  const outdir = join(BUNDLE_DIR, name);
  const result = await build({
    entryPoints: [entry],
    absWorkingDir: repoRoot,
    bundle: true,
    splitting: true,
    outdir,
    outExtension: { '.js': '.mjs' },
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    keepNames: true,
    write: false,
    metafile: true,
    sourcemap: 'inline',
    logLevel: 'silent',
    plugins: [sourceLocations(inputs)],
  });
  const outputs = [...result.outputFiles].sort((a, b) => a.path.localeCompare(b.path));
  const hash = createHash('sha256');
  for (const o of outputs) hash.update(relative(outdir, o.path)).update('\0').update(o.contents);
  const folder = `${outdir}-${hash.digest('hex').slice(0, 16)}`;
  // With splitting, each import() target is an entry point of its own: the one asked for is matched.
  const wanted = relative(repoRoot, entry).split(sep).join('/');
  const main = Object.entries(result.metafile.outputs).find(([, o]) => o.entryPoint === wanted)?.[0];
  if (!main) throw new Error(`bundling ${entry} produced no entry file`);
  const file = join(folder, relative(outdir, join(repoRoot, main)));
  const files = outputs.map((o) => join(folder, relative(outdir, o.path)));
  mkdirSync(BUNDLE_DIR, { recursive: true });
  if (!whole(files)) {
    // A folder of this name missing a file (its removal cut short) is moved aside, atomically, first.
    if (existsSync(folder)) {
      const aside = temporaryName(folder);
      try {
        renameSync(folder, aside);
        rmSync(aside, { recursive: true, force: true });
      } catch {
        // Another runner moved or replaced it meanwhile.
      }
    }
    const tmp = temporaryName(folder);
    for (const o of outputs) {
      const to = join(tmp, relative(outdir, o.path));
      mkdirSync(dirname(to), { recursive: true });
      writeFileSync(to, o.contents);
    }
    try {
      renameSync(tmp, folder);
    } catch (err) {
      // Another runner renamed the same bundle into place first: its files are these bytes.
      rmSync(tmp, { recursive: true, force: true });
      if (!whole(files)) throw err;
    }
  }
  dateAnew(folder);
  removeStale(name);
  return { file, folder, files, inputs };
}

/** Whether every file of a bundle is there. */
const whole = (files: string[]): boolean => files.every((f) => existsSync(f));

const temporaryName = (folder: string) =>
  `${folder}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;

/** Dates a bundle's folder now; false if it is gone. */
const dateAnew = (folder: string): boolean => {
  const now = new Date();
  try {
    utimesSync(folder, now, now);
    return true;
  } catch {
    return false;
  }
};

/** The path of a bundle of `entry` (an absolute .ts path) as its sources stand now. */
export async function bundledEntry(entry: string): Promise<string> {
  const cached = built.get(entry);
  if (cached) {
    const current = await cached.catch(() => undefined);
    const unchanged = current && [...current.inputs].every(([file, at]) => mtime(file) === at);
    if (current && unchanged && whole(current.files) && dateAnew(current.folder)) return current.file;
  }
  const next = bundle(entry);
  built.set(entry, next);
  next.catch(() => {
    if (built.get(entry) === next) built.delete(entry);
  });
  return (await next).file;
}
