// Builds what gets deployed: dist/functions/<name>/ (zipped and uploaded by terraform/functions.tf, then
// `npm ci`ed by Cloud Build) and dist/services/<name>/ (copied into the image by
// terraform/images/Dockerfile). Each is the unit's tsc output plus the shared/ files it imports, in the
// repo's own layout (so import.meta.url-relative paths such as shared/topology/ keep working), a
// package.json naming exactly the npm packages it imports, at the versions installed here, and a
// package-lock.json holding the repo lock's entries for everything those reach (lockfile.ts).
//
//   node --import tsx terraform/build/build-sources.ts [--out dist] [--only api,reconcile]
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importClosure } from './closure.js';
import { type Lockfile, prunedLockfile } from './lockfile.js';
import { listUnits, type Unit, unitOutputDir } from './units.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface BuiltUnit extends Unit {
  /** Absolute path of the unit's deployable folder. */
  outDir: string;
  /** package.json "main": the compiled entry, relative to outDir. */
  main: string;
  dependencies: Record<string, string>;
}

export interface BuildOptions {
  root?: string;
  /** Output root; units land in <out>/functions/<name> and <out>/services/<name>. */
  out?: string;
  /** Build only these units (by name); default all. */
  only?: readonly string[];
}

const jsPath = (ts: string): string => ts.replace(/\.ts$/, '.js');

/** One tsc run over every selected entry: type errors fail the build, so nothing broken is deployed. */
function compile(root: string, units: Unit[], compiledRoot: string): void {
  const config = join(compiledRoot, 'tsconfig.build.json');
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(root, 'tsconfig.json'),
      compilerOptions: {
        noEmit: false,
        outDir: compiledRoot,
        rootDir: root,
        // The config lives outside the repo, so type packages are not found by walking up from it.
        typeRoots: [join(root, 'node_modules/@types')],
        // Comments could hold text that the import scan would mistake for a specifier.
        removeComments: true,
        sourceMap: false,
        declaration: false,
      },
      files: units.map((u) => join(root, u.entry)),
      include: [],
    }),
  );
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', config], {
    cwd: root,
    stdio: 'inherit',
  });
}

/**
 * The repo's `allowScripts` (npm 11.16+: which dependencies' install scripts are reviewed; npm 12 skips the
 * others) for the packages a unit's lock installs, so that its `npm ci` runs the same ones.
 */
function allowedScripts(root: string, lock: Lockfile): Record<string, boolean> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    allowScripts?: Record<string, boolean>;
  };
  const installed = Object.keys(lock.packages);
  return Object.fromEntries(
    Object.entries(pkg.allowScripts ?? {}).filter(([name]) =>
      installed.some((path) => path === `node_modules/${name}` || path.endsWith(`/node_modules/${name}`)),
    ),
  );
}

function runtimeDependencies(root: string): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  return pkg.dependencies ?? {};
}

interface InstalledPackage {
  version: string;
  peerDependencies?: Record<string, string>;
}

const installed = (root: string, name: string): InstalledPackage =>
  JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as InstalledPackage;

/**
 * Pins each imported package at the version installed here (the one the tests ran against), plus the
 * peers they declare that the repo also depends on (hono and zod for @hono/zod-openapi), so that npm
 * does not pick a different peer on deploy.
 */
function pinnedVersions(root: string, unit: Unit, packages: string[]): Record<string, string> {
  const allowed = runtimeDependencies(root);
  for (const name of packages) {
    if (!(name in allowed)) {
      throw new Error(`${unit.dir} imports ${name}, which is not in package.json "dependencies"`);
    }
  }
  const pinned: Record<string, string> = {};
  const pending = [...packages];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (name in pinned) continue;
    const pkg = installed(root, name);
    pinned[name] = pkg.version;
    pending.push(...Object.keys(pkg.peerDependencies ?? {}).filter((peer) => peer in allowed));
  }
  return Object.fromEntries(Object.entries(pinned).sort(([a], [b]) => a.localeCompare(b)));
}

function assemble(root: string, unit: Unit, compiledRoot: string, out: string, lock: Lockfile): BuiltUnit {
  const outDir = join(out, unitOutputDir[unit.kind], unit.name);
  const main = jsPath(unit.entry);
  const closure = importClosure(compiledRoot, main);
  rmSync(outDir, { recursive: true, force: true });
  for (const file of closure.files) {
    mkdirSync(dirname(join(outDir, file)), { recursive: true });
    cpSync(join(compiledRoot, file), join(outDir, file));
  }
  // Read at run time through shared/src/config/topology.ts.
  cpSync(join(root, 'shared/topology'), join(outDir, 'shared/topology'), { recursive: true });
  const dependencies = pinnedVersions(root, unit, closure.packages);
  const manifest = {
    name: `proxyplane-${unit.name}`,
    private: true,
    type: 'module',
    main,
    engines: { node: '>=20.3' }, // AbortSignal.any (the probe's cancelled checks)
    // Services start with `node .` (the image's CMD); functions are started by functions-framework, and a
    // start script would only invite the buildpack to run something else.
    ...(unit.kind === 'service' ? { scripts: { start: `node ${main}` } } : {}),
    dependencies,
  };
  // `npm ci` (Cloud Build's buildpack, the image) installs from it: the transitive packages too are the
  // tested ones, integrity-checked.
  const unitLock = prunedLockfile(lock, manifest.name, dependencies);
  const allowScripts = allowedScripts(root, unitLock);
  const written = Object.keys(allowScripts).length > 0 ? { ...manifest, allowScripts } : manifest;
  writeFileSync(join(outDir, 'package.json'), `${JSON.stringify(written, null, 2)}\n`);
  writeFileSync(join(outDir, 'package-lock.json'), `${JSON.stringify(unitLock, null, 2)}\n`);
  return { ...unit, outDir, main, dependencies };
}

export function buildSources(options: BuildOptions = {}): BuiltUnit[] {
  const root = options.root ?? repoRoot;
  const out = resolve(root, options.out ?? 'dist');
  const all = listUnits(root);
  const units = options.only ? all.filter((u) => options.only?.includes(u.name)) : all;
  const unknown = (options.only ?? []).filter((name) => !all.some((u) => u.name === name));
  if (unknown.length > 0) throw new Error(`unknown units: ${unknown.join(', ')}`);
  const missing = units.filter((u) => !existsSync(join(root, u.entry)));
  if (missing.length > 0) throw new Error(`entry points missing: ${missing.map((u) => u.entry).join(', ')}`);

  const compiledRoot = mkdtempSync(join(tmpdir(), 'proxyplane-build-'));
  try {
    compile(root, units, compiledRoot);
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as Lockfile;
    return units.map((unit) => assemble(root, unit, compiledRoot, out, lock));
  } finally {
    rmSync(compiledRoot, { recursive: true, force: true });
  }
}

function argValue(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : undefined;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const argv = process.argv.slice(2);
  const only = argValue(argv, '--only')?.split(',').filter(Boolean);
  const built = buildSources({ out: argValue(argv, '--out'), only });
  for (const u of built) {
    console.log(
      `${u.kind} ${u.name}: ${u.outDir} (${Object.keys(u.dependencies).join(', ') || 'no packages'})`,
    );
  }
}
