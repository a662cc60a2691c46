// A child process in its own process group that counts as started only once `ready()` resolves; if
// it exits first, starting fails at once with the exit code and where its log is.
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parentPidEnv, startGroup } from '../launcher/process-group.js';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ReadyProcess {
  pid: number;
  /** Resolves when the process exits, for whatever reason. */
  exited: Promise<ExitInfo>;
  stop(): Promise<void>;
}

export interface ReadyProcessOptions {
  name: string;
  command: string;
  args: string[];
  cwd?: string;
  env?: Record<string, string>;
  logFile?: string;
  ready(): Promise<void>;
  /** Called as soon as the process exists, before it is ready, so a shutdown can stop it meanwhile. */
  onSpawn?: (stop: () => Promise<void>) => void;
  /** How long a stop waits after SIGTERM before SIGKILL (process-group.ts's 5 s if unset). */
  stopGraceMs?: number;
}

/** Preloaded into Node children: they stop when this process is gone (exit-with-parent.mjs says why). */
const EXIT_WITH_PARENT = new URL('../launcher/exit-with-parent.mjs', import.meta.url).href;

export async function startReadyProcess(opts: ReadyProcessOptions): Promise<ReadyProcess> {
  if (opts.logFile) mkdirSync(dirname(opts.logFile), { recursive: true });
  const isNode = opts.command === process.execPath;
  const proc = startGroup({
    name: opts.name,
    command: opts.command,
    args: isNode ? ['--import', EXIT_WITH_PARENT, ...opts.args] : opts.args,
    cwd: opts.cwd,
    env: isNode ? { ...opts.env, ...parentPidEnv() } : opts.env,
    logFile: opts.logFile,
  });
  const stop = () => proc.stop(opts.stopGraceMs);
  opts.onSpawn?.(stop);
  const exited = once(proc.child, 'exit').then(([code, signal]) => ({ code, signal }) as ExitInfo);
  const early = exited.then(({ code, signal }) => {
    const where = opts.logFile ? ` (log: ${opts.logFile})` : '';
    throw new Error(`${opts.name} exited before it was ready (code ${code}, signal ${signal})${where}`);
  });
  early.catch(() => {});
  try {
    await Promise.race([opts.ready(), early]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { pid: proc.pid, exited, stop };
}
