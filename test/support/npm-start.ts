// `npm start` as a test runs it: its own process group (as a shell job is), a free port offset so it runs
// beside a developer's plane, its own state dir; output collected; stop() is Ctrl-C to the group, then
// SIGKILL if it has not ended in time. The printed export lines are parsed for the test to use.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { planeLayout } from '../../emulators/local-plane/layout.js';
import { assertPortsFree } from '../../emulators/local-plane/ports.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';

export async function freeOffset(): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const offset = 2000 + Math.floor(Math.random() * 38_000);
    try {
      await assertPortsFree(planeLayout(offset).claims);
      const { demoTarget } = planeLayout(offset).ports;
      await assertPortsFree([{ key: 'emulators.demoTarget.port', ...demoTarget }]);
      return offset;
    } catch {
      // taken: try another
    }
  }
  throw new Error('no free port offset found');
}

export interface NpmStart {
  proc: ChildProcess;
  offset: number;
  stateDir: string;
  output(): string;
  /** Resolves when `done(output)` holds; rejects on timeout or if npm exits first. */
  waitFor(done: (out: string) => boolean, timeoutMs: number, what: string): Promise<void>;
  /** The `export K=V` lines the plane printed. */
  exports(): Record<string, string>;
  stop(): Promise<string>;
}

export function npmStart(args: string[], extraEnv: Record<string, string> = {}, offset: number): NpmStart {
  const stateDir = mkdtempSync(join(tmpdir(), 'npm-start-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PROXYPLANE_PORT_OFFSET: String(offset),
    PROXYPLANE_STATE_DIR: stateDir,
    ...extraEnv,
  };
  for (const k of ['FIRESTORE_EMULATOR_HOST', 'PUBSUB_EMULATOR_HOST', 'GOOGLE_CLOUD_PROJECT']) delete env[k];
  const proc = spawn('npm', ['start', '--', ...args], { cwd: repoRoot, env, detached: true });
  let out = '';
  proc.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  proc.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<string>((resolve) => proc.once('exit', (c, s) => resolve(`${c}/${s}`)));
  const alive = () => proc.exitCode === null && proc.signalCode === null;
  return {
    proc,
    offset,
    stateDir,
    output: () => out,
    async waitFor(done, timeoutMs, what) {
      const deadline = Date.now() + timeoutMs;
      while (!done(out)) {
        if (!alive()) throw new Error(`npm start exited before ${what}:\n${out}`);
        if (Date.now() > deadline) throw new Error(`no ${what} after ${timeoutMs} ms:\n${out}`);
        await sleep(200);
      }
    },
    exports: () =>
      Object.fromEntries([...out.matchAll(/^ {2}export (\w+)=(\S*)$/gm)].map((m) => [m[1]!, m[2]!])),
    async stop() {
      if (alive()) {
        try {
          process.kill(-proc.pid!, 'SIGINT');
        } catch {
          // already gone
        }
      }
      const result = await Promise.race([exited, sleep(60_000).then(() => 'timeout')]);
      if (result === 'timeout') {
        try {
          process.kill(-proc.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(stateDir, { recursive: true, force: true });
      return result;
    },
  };
}
