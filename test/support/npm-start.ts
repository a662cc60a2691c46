// `npm start` as a test runs it: its own process group (as a shell job is), a free port offset so it runs
// beside a developer's plane, its own state dir; output collected; stop() is Ctrl-C to the group, then
// SIGKILL if it has not ended in time. The printed export lines are parsed for the test to use.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { planeLayout } from '../../emulators/local-plane/layout.js';
import { assertPortsFree } from '../../emulators/local-plane/ports.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';

const SLOT = 2_000;
const FIRST_OFFSET = 2_000;

/** The low end of the kernel's ephemeral port range (Linux), where port-0 binds and outgoing connections land. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A port offset for `npm start` under test (beside a developer's plane at offset 0). All the plane's ports
 * stay below the ephemeral range: with an offset inside it, an unrelated socket (any test's freePort() or
 * outgoing connection) could take the demo site's port between this check and the plane's bind, and did
 * once in CI. Test files running at once get disjoint slots by vitest's pool id, so two planes never
 * overlap either.
 */
export async function freeOffset(): Promise<number> {
  const all = (offset: number) => {
    const layout = planeLayout(offset);
    const gw = layout.ports.gateway;
    return [
      ...layout.claims,
      { key: 'emulators.demoTarget.port', ...layout.ports.demoTarget },
      {
        key: 'emulators.demoTarget.tlsPort',
        host: layout.ports.demoTarget.host,
        port: layout.ports.demoTarget.tlsPort,
      },
      { key: 'emulators.gateway.proxyPort', host: gw.host, port: gw.proxyPort },
      { key: 'emulators.gateway.httpPort', host: gw.host, port: gw.httpPort },
    ];
  };
  const ports = all(0).map((c) => c.port);
  const lowest = Math.min(...ports);
  const highest = Math.max(...ports);
  const slots = Math.max(1, Math.floor((ephemeralLow() - highest - FIRST_OFFSET) / SLOT));
  const slot = (Math.max(1, Number(process.env.VITEST_POOL_ID) || 1) - 1) % slots;
  const room = SLOT - (highest - lowest) - 1;
  for (let i = 0; i < 20; i++) {
    const offset = FIRST_OFFSET + slot * SLOT + Math.floor(Math.random() * room);
    try {
      await assertPortsFree(all(offset));
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
