// A child started in its own process group, so that stopping it also stops everything it spawned
// (the Pub/Sub emulator's shell wrapper starts a JVM; killing only the wrapper would leave java behind).
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';

export interface GroupProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  logFile?: string;
}

export function startGroup(opts: StartOptions): GroupProcess {
  const out = opts.logFile ? createWriteStream(opts.logFile, { flags: 'a' }) : 'ignore';
  const child = spawn(opts.command, opts.args, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    detached: true,
    stdio: ['ignore', out === 'ignore' ? 'ignore' : 'pipe', out === 'ignore' ? 'ignore' : 'pipe'],
  });
  if (out !== 'ignore') {
    child.stdout?.pipe(out);
    child.stderr?.pipe(out);
  }
  if (child.pid === undefined) throw new Error(`could not start ${opts.name} (${opts.command})`);
  const pid = child.pid;
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    name: opts.name,
    pid,
    child,
    async stop(graceMs = 5000) {
      signalGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // The leader may exit before its JVM child: make sure the whole group is gone.
      signalGroup(pid, 'SIGKILL');
    },
  };
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}
