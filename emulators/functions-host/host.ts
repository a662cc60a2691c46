// Hosts one function the way Cloud Functions runs it: the real functions-framework CLI (so the
// emulator's push becomes the same CloudEvent Eventarc delivers, recipes §1), its TypeScript bundled
// into one JavaScript file (entry-bundle.ts says why and how the source's semantics are kept),
// in its own process group so stopping it leaves nothing behind, listening on its host only
// (listen-on-host.mjs: the CLI alone would listen on every interface).
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join } from 'node:path';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { bundledEntry } from '../launcher/entry-bundle.js';
import { readyFile } from './ready-file.js';
import { type ExitInfo, startReadyProcess } from './ready-process.js';

const frameworkCli = join(
  dirname(createRequire(import.meta.url).resolve('@google-cloud/functions-framework')),
  'main.js',
);
const LISTEN_ON_HOST = new URL('./listen-on-host.mjs', import.meta.url).href;

export interface FunctionSource {
  name: string;
  /** Folder holding src/index.ts, relative to the repo root or absolute (functions.json `source`). */
  source: string;
  /** The name the module registers with functions.cloudEvent(...) (functions.json `target`). */
  target: string;
  /** Request timeout the framework enforces, as Cloud Functions does (functions.json `timeoutSeconds`). */
  timeoutSeconds?: number;
}

export interface HostFunctionOptions {
  fn: FunctionSource;
  port: number;
  /** Where it listens, and the host the URL names. */
  host?: string;
  /** Emulator hosts, GOOGLE_CLOUD_PROJECT and whatever the function reads, over this process's env. */
  env: Record<string, string>;
  logFile?: string;
  readyTimeoutMs?: number;
  onSpawn?: (stop: () => Promise<void>) => void;
}

export interface HostedFunction {
  name: string;
  /** Base URL; Pub/Sub pushes go to `${url}/projects/<p>/topics/<t>`. */
  url: string;
  port: number;
  pid: number;
  exited: Promise<ExitInfo>;
  stop(): Promise<void>;
}

export const entryFile = (source: string): string =>
  join(isAbsolute(source) ? source : join(repoRoot, source), 'src', 'index.ts');

export async function hostFunction(opts: HostFunctionOptions): Promise<HostedFunction> {
  const { fn, port } = opts;
  const host = opts.host ?? '127.0.0.1';
  const args = [
    '--import',
    LISTEN_ON_HOST,
    frameworkCli,
    `--source=${await bundledEntry(entryFile(fn.source))}`,
    `--target=${fn.target}`,
  ];
  args.push(`--port=${port}`);
  if (fn.timeoutSeconds) args.push(`--timeout=${fn.timeoutSeconds}`);
  const ready = readyFile();
  const proc = await startReadyProcess({
    name: `function ${fn.name}`,
    command: process.execPath,
    args,
    cwd: repoRoot,
    env: {
      METADATA_SERVER_DETECTION: 'none',
      K_SERVICE: fn.name,
      ...opts.env,
      PROXYPLANE_FUNCTION_HOST: host,
      PROXYPLANE_FUNCTION_PORT: String(port),
      PROXYPLANE_FUNCTION_READY_FILE: ready.path,
    },
    logFile: opts.logFile,
    onSpawn: opts.onSpawn,
    // The framework listens only after the module loaded and registered its target; a cloudevent
    // function answers a bare GET with a 500, so an HTTP probe could not tell. Nor could a connection:
    // the port may be another process's (ready-file.ts).
    ready: () => ready.wait(opts.readyTimeoutMs ?? 60_000, `function ${fn.name} on ${host}:${port}`),
  }).finally(() => ready.remove());
  return { name: fn.name, url: `http://${host}:${port}`, port, ...proc };
}
