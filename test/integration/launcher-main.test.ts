// `npm run emulators` (emulators/launcher/main.ts) as a real process: a signal while the JVMs are still
// starting must stop them (they run detached, in their own process groups, so nothing else would), and
// a port something else holds must be refused up front instead of "ready" against the other server.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';
import { loadLocalPorts } from '../../shared/src/config/local-ports.js';
import { pollUntil } from '../support/poll.js';

const base = loadLocalPorts();

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ host: '127.0.0.1', port, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** A PROXYPLANE_PORT_OFFSET whose Firestore and Pub/Sub ports are both free (never firebase.json's own). */
async function freeOffset(): Promise<{ offset: number; firestore: number; pubsub: number }> {
  for (let i = 0; i < 20; i++) {
    const firestore = await freePort();
    const offset = firestore - base.firestore.port;
    const pubsub = base.pubsub.port + offset;
    if (offset > 0 && offset <= 40_000 && (await isFree(pubsub))) return { offset, firestore, pubsub };
  }
  throw new Error('no free port pair');
}

interface Proc {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
  comm: string;
}

function processes(): Proc[] {
  const out: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({ pid: Number(entry), ppid: Number(ppid), pgid: Number(pgid), state: state!, comm });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Live (not zombie) processes in these process groups. */
const liveIn = (groups: number[]) => processes().filter((p) => groups.includes(p.pgid) && p.state !== 'Z');

let launcher: ChildProcess | undefined;
let groups: number[] = [];
afterEach(() => {
  // Whatever a failing run left behind: the launcher and the process groups it started, by id.
  if (launcher?.exitCode === null && launcher.signalCode === null) {
    const pid = launcher.pid;
    for (const p of processes()) if (p.ppid === pid && p.pgid === p.pid) groups.push(p.pid);
    launcher.kill('SIGKILL');
  }
  // Never our own group (a child between fork and setsid still shares it): that would SIGKILL vitest.
  const own = processes().find((p) => p.pid === process.pid)?.pgid;
  for (const g of groups.filter((g) => g !== own && g > 1)) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  launcher = undefined;
  groups = [];
});

/** The launcher's exit code, or a failure naming what it printed if it has not exited within `ms`. */
async function exitCode(run: ReturnType<typeof startLauncher>, ms: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const [code] = await Promise.race([
      run.exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`launcher did not exit; output: ${run.output.text}`)), ms);
      }),
    ]);
    return code;
  } finally {
    clearTimeout(timer);
  }
}

function startLauncher(offset: number | string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'emulators/launcher/main.ts'], {
    env: {
      ...process.env,
      PROXYPLANE_PORT_OFFSET: String(offset),
      GOOGLE_CLOUD_PROJECT: 'demo-launcher',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { text: '' };
  child.stdout!.on('data', (d: Buffer) => {
    output.text += d;
  });
  child.stderr!.on('data', (d: Buffer) => {
    output.text += d;
  });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  return { child, output, exited };
}

describe('npm run emulators', () => {
  it.each(['SIGINT', 'SIGHUP'] as const)(
    '%s while the emulators are still starting stops every process they spawned',
    async (signal) => {
      const { offset } = await freeOffset();
      const run = startLauncher(offset);
      launcher = run.child;
      const leaders = await pollUntil(
        // The children that lead their own group: right after fork a child still has the launcher's
        // until its setsid, and tsx's esbuild service is a child of the launcher in the launcher's group.
        () => processes().filter((p) => p.ppid === run.child.pid && p.pgid === p.pid),
        (ps) => ps.length === 2,
        40_000,
        'the launcher to spawn both emulators, each leading its own process group',
      );
      groups = leaders.map((p) => p.pid);
      // The JVMs themselves (Pub/Sub's behind its shell wrapper) are what a lost signal would orphan.
      await pollUntil(
        () => liveIn(groups).filter((p) => p.comm === 'java'),
        (javas) => groups.every((g) => javas.some((p) => p.pgid === g)),
        40_000,
        'a JVM in each emulator group',
      );
      // Still starting: nothing printed yet, so the signal lands in the window this test is about.
      expect(run.output.text).not.toContain('export ');
      // The JVMs write into files the launcher names (their output is why one died), not into nothing.
      // Named for the user too: another user's dir of this offset, left in the sticky /tmp, is not in the way.
      const logDir = join(tmpdir(), `proxyplane-emulators-${process.getuid?.()}-${offset}`);
      expect(run.output.text).toContain(`emulator logs: ${logDir}`);
      expect(readdirSync(logDir).sort()).toEqual(['firestore.log', 'pubsub.log']);
      run.child.kill(signal);
      const code = await exitCode(run, 40_000);
      expect(code).toBe(0);
      rmSync(logDir, { recursive: true, force: true });
      const left = await pollUntil(
        () => liveIn(groups),
        (ps) => ps.length === 0,
        5_000,
        'no live process in the emulators’ groups',
      ).catch(() => liveIn(groups));
      expect(left).toEqual([]);
    },
    120_000,
  );

  it('refuses a port another server answers on, naming it, and starts nothing', async () => {
    const { offset, pubsub } = await freeOffset();
    // An HTTP server: before the pre-check, the readiness poll took its answer for the emulator's.
    const squatter = http.createServer((_req, res) => res.end('not an emulator'));
    await new Promise<void>((r) => squatter.listen(pubsub, '127.0.0.1', () => r()));
    try {
      const run = startLauncher(offset);
      launcher = run.child;
      const code = await exitCode(run, 20_000);
      expect(run.output.text).toContain(
        `port ${pubsub} on 127.0.0.1 (firebase.json emulators.pubsub.port) is already in use`,
      );
      expect(code).toBe(2);
      expect(run.output.text).not.toContain('export ');
    } finally {
      squatter.closeAllConnections();
      await new Promise((r) => squatter.close(r));
    }
  }, 40_000);

  it('without a working Java says what to install or fix, not a stack trace, and starts nothing', async () => {
    const { offset } = await freeOffset();
    const run = startLauncher(offset, { JAVA_HOME: '/nonexistent-jdk' });
    launcher = run.child;
    const code = await exitCode(run, 20_000);
    expect(code).not.toBe(0);
    // A JAVA_HOME that holds no Java is the thing to fix, not "install Java".
    expect(run.output.text).toContain('JAVA_HOME=/nonexistent-jdk');
    expect(run.output.text).toContain('Java 17 or newer');
    expect(run.output.text).not.toMatch(/\n\s+at /);
    expect(run.output.text).not.toContain('export ');
  }, 40_000);

  it.each([
    ['abc', 'must be a non-negative integer, got "abc"'],
    ['50000', 'PROXYPLANE_PORT_OFFSET 50000 pushes ports past 65535'],
  ])(
    'refuses PROXYPLANE_PORT_OFFSET=%s with exit 2 and starts nothing',
    async (offset, message) => {
      const run = startLauncher(offset);
      launcher = run.child;
      const code = await exitCode(run, 20_000);
      expect(run.output.text).toContain(message);
      expect(code).toBe(2);
      expect(run.output.text).not.toContain('export ');
    },
    40_000,
  );
});
