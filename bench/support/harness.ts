// Prepares the handbook's gateway benchmark harness (../shared/bench) for a run, as its README says: a
// copy in a temp dir (it writes run/ and results/ beside itself; its code is never committed here), the
// Debian packages it needs, its Go load generator built, proxy-chain resolved from this repo's modules.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitForPort } from '../../emulators/functions-host/wait-port.js';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

function findHarness(): string {
  const candidates = [
    process.env.GATEWAY_BENCH_HARNESS,
    resolve(repoRoot, '../shared/bench'),
    resolve(repoRoot, '../../shared/bench'),
  ].filter((c): c is string => Boolean(c));
  const found = candidates.find((c) => existsSync(join(c, 'bench.mjs')));
  if (!found)
    throw new Error(
      `gateway bench harness not found (tried ${candidates.join(', ')}); set GATEWAY_BENCH_HARNESS`,
    );
  return found;
}

const has = (cmd: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** Installs (apt-get) the Debian package of each [command, package] pair whose command is missing. */
export function ensureCommands(wanted: readonly (readonly [string, string])[]): void {
  const missing = wanted.filter(([cmd]) => !has(cmd));
  if (missing.length === 0) return;
  const pkgs = missing.map(([, pkg]) => pkg);
  console.log(`installing ${pkgs.join(' ')} (apt-get)`);
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', ...pkgs], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

/** A ready-to-run copy of the harness; returns its directory. */
export function prepareHarness(): string {
  ensureCommands([
    ['squid', 'squid'],
    ['go', 'golang-go'],
  ]);
  const src = findHarness();
  const dir = mkdtempSync(join(tmpdir(), 'gwbench-'));
  // squid drops root for the "proxy" user: it must be able to reach run/ and conf/ in here.
  chmodSync(dir, 0o755);
  cpSync(src, dir, {
    recursive: true,
    filter: (p) => !/\/(results|run|bin|node_modules)(\/|$)/.test(p.slice(src.length)),
  });
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  execFileSync('go', ['build', '-o', '../bin/pxload', '.'], {
    cwd: join(dir, 'loadgen'),
    stdio: 'inherit',
    env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local', GOCACHE: join(dir, '.gocache') },
  });
  return dir;
}

/**
 * Compiles the gateway (and the bench wrapper) with tsc into the harness copy, whose node_modules link
 * and "type": "module" make the output runnable as is. The bench measures the gateway as it is deployed,
 * compiled JavaScript: under tsx the loader's larger heap turns the long-tunnel buffer churn into major
 * GCs (external memory pressure), which measured ~1.5x the CPU per GiB of the same code compiled.
 */
export function buildGateway(harness: string): string {
  const outDir = join(harness, 'gateway-dist');
  const tsconfig = join(harness, 'tsconfig.gateway.json');
  writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: join(repoRoot, 'tsconfig.json'),
      compilerOptions: { noEmit: false, outDir, rootDir: repoRoot, sourceMap: false, declaration: false },
      include: [
        join(repoRoot, 'functions/gateway/src/**/*.ts'),
        join(repoRoot, 'bench/support/gateway-standalone.ts'),
      ],
      exclude: [join(repoRoot, '**/*.test.ts')],
    }),
  );
  execFileSync(join(repoRoot, 'node_modules/.bin/tsc'), ['-p', tsconfig], { stdio: 'inherit' });
  return join(outDir, 'bench/support/gateway-standalone.js');
}

/**
 * The harness's squid.conf rendered into its run/ directory (created world-writable: squid drops root for
 * the "proxy" user and writes its pid and log there), as bench.mjs renders it; returns the conf's path.
 */
export function renderSquidConf(harness: string): string {
  const run = join(harness, 'run');
  mkdirSync(run, { recursive: true });
  chmodSync(run, 0o777);
  const conf = join(run, 'squid.conf');
  writeFileSync(conf, readFileSync(join(harness, 'conf/squid.conf'), 'utf8').replaceAll('@@DIR@@', harness));
  return conf;
}

/** Resolves once 127.0.0.1:`port` accepts a connection (a bench's own processes), within 20 s. */
export const waitPort = (port: number) => waitForPort('127.0.0.1', port, { timeoutMs: 20_000 });
