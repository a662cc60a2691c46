// The `proxyplane` CLI two ways, with the same environment: only what a user's shell would have (no
// emulator hosts, no running plane's state; gcloud only if it is on /usr/bin or /bin, and only consulted
// when no token variable is set), its exit code and output.
//   cliRunner:    node bin/proxyplane.mjs as a real process (tsx, cli/main.ts: argv, env, stdin, stdout,
//                 stderr and the exit code of a process). About a second of start-up per command on an idle
//                 box, several on a loaded one.
//   cliInProcess: runCli (cli/run.ts, everything main.ts calls) in the test's own worker, with the env below
//                 and an Io that records what main.ts's would print. Milliseconds per command: the files
//                 that run the CLI dozens of times use it for most cases and the real process for the
//                 cases that depend on being one (stdin, a non-terminal stdout, the exit code of a process).
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { tokenSources } from '../../cli/config.js';
import type { Io } from '../../cli/context.js';
import { runCli } from '../../cli/run.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

type Run = (args: string[], env?: Record<string, string>, stdin?: string) => Promise<CliRun>;

export interface CliRunner extends Run {
  /** Writes `text` to `name` in the runner's directory and returns the path. */
  file(name: string, text: string): string;
}

export interface CliRunnerOptions {
  /** The command's working directory and state directory. */
  dir: string;
  apiUrl: () => string;
  adminToken: string;
  /** More variables of the user's shell, for every command (a call's own env comes on top). */
  env?: Record<string, string>;
}

/** The whole environment a command sees: the user's shell, nothing of the test process's. */
function userEnv(o: CliRunnerOptions, env: Record<string, string>): Record<string, string> {
  return {
    PATH: '/usr/bin:/bin',
    METADATA_SERVER_DETECTION: 'none',
    PROXYPLANE_STATE_DIR: o.dir,
    PROXYPLANE_API_URL: o.apiUrl(),
    PROXYPLANE_ADMIN_TOKEN: o.adminToken,
    ...o.env,
    ...env,
  };
}

function withFile(o: CliRunnerOptions, run: Run): CliRunner {
  return Object.assign(run, {
    file(name: string, text: string): string {
      const path = join(o.dir, name);
      writeFileSync(path, text);
      return path;
    },
  });
}

/** A runner of node bin/proxyplane.mjs processes against `apiUrl()` with the admin token, in `dir`. */
export function cliRunner(o: CliRunnerOptions): CliRunner {
  return withFile(
    o,
    (args, env = {}, stdin) =>
      new Promise<CliRun>((done) => {
        const child = execFile(
          process.execPath,
          [join(repoRoot, 'bin/proxyplane.mjs'), ...args],
          { cwd: o.dir, timeout: 60_000, env: userEnv(o, env) },
          (err, stdout, stderr) =>
            done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
        if (stdin !== undefined) child.stdin!.end(stdin);
      }),
  );
}

/**
 * The same commands through runCli in this process: the env, token sources and Io that cli/main.ts builds
 * for a process whose stdout and stderr are pipes (not a terminal: no escape codes, 120 columns), relative
 * paths resolved in `dir` as the process's cwd, stdin the given text (empty when none), never interrupted.
 */
export function cliInProcess(o: CliRunnerOptions): CliRunner {
  return withFile(o, async (args, callEnv = {}, stdin) => {
    const env = userEnv(o, callEnv);
    let stdout = '';
    let stderr = '';
    const io: Io = {
      out: (text) => {
        stdout += `${text}\n`;
      },
      err: (text) => {
        stderr += `${text}\n`;
      },
      isTTY: false,
      columns: 120,
      readStdin: async () => stdin ?? '',
      readFile: (path) => readFile(resolve(o.dir, path), 'utf8'),
      now: () => new Date(),
      sleep: (ms, signal) => sleep(ms, undefined, { signal }).catch(() => {}),
      interrupted: new AbortController().signal,
    };
    const code = await runCli(args, { io, env, tokens: tokenSources(env) });
    return { code, stdout, stderr };
  });
}
