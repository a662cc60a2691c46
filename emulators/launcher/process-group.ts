// A child started in its own process group, so that stopping it also stops everything it spawned
// (the Pub/Sub emulator's shell wrapper starts a JVM; killing only the wrapper would leave java behind).
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface GroupProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Settles once the child has exited, however: stopped, or crashed long after it was ready. */
  readonly exited: Promise<{ code: number | null }>;
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  logFile?: string;
  /**
   * Run a command that is not Node under group-leader.mjs, which stops the group once this process is
   * gone, however it ended (a Node command gets exit-with-parent.mjs itself: ready-process.ts).
   */
  exitWithParent?: boolean;
}

const EXIT_WITH_PARENT = new URL('./exit-with-parent.mjs', import.meta.url).href;
/** Names the process exit-with-parent.mjs must outlive: whoever spawned it, not whoever adopted it. */
export const PARENT_PID_ENV = 'PROXYPLANE_PARENT_PID';
/** The environment entry a child preloaded with exit-with-parent.mjs is started with. */
export const parentPidEnv = (): Record<string, string> => ({ [PARENT_PID_ENV]: String(process.pid) });
const GROUP_LEADER = fileURLToPath(new URL('./group-leader.mjs', import.meta.url));

export function startGroup(opts: StartOptions): GroupProcess {
  // The child writes its stdout and stderr straight into the log file (one O_APPEND descriptor it
  // inherits), rather than through pipes into one WriteStream: with `a.pipe(s); b.pipe(s)` the first
  // source to end ends the stream, so stderr written after stdout closed — often the reason a JVM died —
  // was lost or threw ERR_STREAM_WRITE_AFTER_END, uncaught. Opening synchronously also makes a bad log
  // path a plain throw here instead of an 'error' event nobody listens to.
  const fd = opts.logFile ? openSync(opts.logFile, 'a') : undefined;
  let child: ChildProcess;
  try {
    const [command, args] = opts.exitWithParent
      ? [process.execPath, ['--import', EXIT_WITH_PARENT, GROUP_LEADER, opts.command, ...opts.args]]
      : [opts.command, opts.args];
    child = spawn(command, args, {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env, ...(opts.exitWithParent ? parentPidEnv() : {}) },
      detached: true,
      stdio: ['ignore', fd ?? 'ignore', fd ?? 'ignore'],
    });
  } finally {
    // The child holds its own copy of the descriptor.
    if (fd !== undefined) closeSync(fd);
  }
  // A binary that is missing or not executable leaves pid undefined and emits 'error' on the next tick;
  // without a listener that event would crash the process after we have already thrown below. Errors
  // later in the child's life (a failed kill) are reported by exitCode/stop(), not by this event.
  child.on('error', () => {});
  if (child.pid === undefined)
    throw new Error(`could not start ${opts.name}: ${opts.command} is missing or not executable`);
  const pid = child.pid;
  // Once the leader is reaped and no member is left, `pid` may be handed to another process, which can
  // lead a group of its own (a new shell job): stop() called later — a child that died hours before the
  // Ctrl-C — would signal that group. The group's state is read as the leader's exit is reported, long
  // before the kernel could reuse its id; a group that outlives its leader (the JVM a wrapper started)
  // keeps its id, and is still stopped.
  let groupGone = false;
  const exited = new Promise<{ code: number | null }>((resolve) => {
    const onExit = () => {
      groupGone = !groupAlive(pid);
      resolve({ code: child.exitCode });
    };
    if (child.exitCode !== null || child.signalCode !== null) onExit();
    else child.once('exit', onExit);
  });
  const signal = (sig: NodeJS.Signals) => {
    if (!groupGone) signalGroup(pid, sig);
  };
  return {
    name: opts.name,
    pid,
    child,
    exited,
    async stop(graceMs = 5000) {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // The leader may exit before its JVM child: make sure the whole group is gone.
      signal('SIGKILL');
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

/** Signal 0 checks without signalling; EPERM means members exist that we may not signal. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
