// `npm start` for real: with a port offset (so it runs beside a developer's plane) and --no-demo, every
// endpoint line appears within 60 s and answers; SIGINT to its process group (what Ctrl-C does) stops it,
// and no process of its tree survives, java included.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { functionInventory } from '../../emulators/local-plane/functions.js';
import { isBuilt, OPTIONAL_EMULATORS } from '../../emulators/local-plane/optional.js';
import { assertPortsFree, offsetPorts } from '../../emulators/local-plane/ports.js';
import { type LocalPorts, loadLocalPorts, repoRoot } from '../../shared/src/config/local-ports.js';
import { loadFunctionTable } from '../../shared/src/config/topology.js';

interface Proc {
  pid: number;
  comm: string;
  startTime: string;
}

/** Every live descendant of `root` (and root), from /proc: pid, command name, start time (against pid reuse). */
function processTree(root: number): Proc[] {
  const all: Array<Proc & { ppid: number }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' '); // fields[0] = state (field 3)
      all.push({
        pid: Number(entry),
        comm: stat.slice(stat.indexOf('(') + 1, close),
        ppid: Number(fields[1]),
        startTime: fields[19]!,
      });
    } catch {
      // exited while we read
    }
  }
  const tree = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all) {
      if (!tree.has(p.pid) && tree.has(p.ppid)) {
        tree.add(p.pid);
        grew = true;
      }
    }
  }
  return all.filter((p) => tree.has(p.pid)).map(({ pid, comm, startTime }) => ({ pid, comm, startTime }));
}

function alive(p: Proc): boolean {
  try {
    const stat = readFileSync(`/proc/${p.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] === p.startTime && fields[0] !== 'Z';
  } catch {
    return false;
  }
}

async function freeOffset(base: LocalPorts): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const offset = 2000 + Math.floor(Math.random() * 38_000);
    const p = offsetPorts(base, offset);
    const claims = [p.firestore, p.pubsub, p.compute, p.secretmanager, p.scheduler, p.api]
      .concat(Object.values(p.functions.ports).map((port) => ({ host: p.functions.host, port })))
      .map((hp) => ({ ...hp, key: 'x' }));
    try {
      await assertPortsFree(claims);
      return offset;
    } catch {
      // taken: try another
    }
  }
  throw new Error('no free port offset found');
}

describe('npm start', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'local-plane-e2e-'));
  let child: ChildProcess | undefined;
  let tree: Proc[] = [];

  afterAll(() => {
    // Only if the test failed half-way: kill what is left of our own tree, by pid.
    for (const p of tree.filter(alive)) process.kill(p.pid, 'SIGKILL');
    if (child?.pid && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('prints every endpoint within 60 s, serves them, and leaves no process after SIGINT', async () => {
    const base = loadLocalPorts();
    const offset = await freeOffset(base);
    const ports = offsetPorts(base, offset);
    const built = functionInventory(loadFunctionTable()).built.map((f) => f.name);
    const expected = new Map<string, number>([
      ['firestore', ports.firestore.port],
      ['pubsub', ports.pubsub.port],
      ['scheduler', ports.scheduler.port],
      ['api', ports.api.port],
      ...built.map((n) => [`function:${n}`, ports.functions.ports[n]!] as [string, number]),
    ]);
    if (isBuilt(OPTIONAL_EMULATORS.compute)) expected.set('compute', ports.compute.port);
    if (isBuilt(OPTIONAL_EMULATORS.secretmanager)) expected.set('secretmanager', ports.secretmanager.port);

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PROXYPLANE_PORT_OFFSET: String(offset),
      PROXYPLANE_STATE_DIR: stateDir,
    };
    for (const k of ['FIRESTORE_EMULATOR_HOST', 'PUBSUB_EMULATOR_HOST', 'GOOGLE_CLOUD_PROJECT'])
      delete env[k];
    // detached: its own process group, as a shell job is; SIGINT to the group is what Ctrl-C sends.
    const npm = spawn('npm', ['start', '--', '--no-demo'], { cwd: repoRoot, env, detached: true });
    child = npm;
    let out = '';
    npm.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    npm.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<string>((resolve) =>
      npm.once('exit', (code, signal) => resolve(`${code}/${signal}`)),
    );

    const endpoints = new Map<string, string>();
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && npm.exitCode === null) {
      for (const m of out.matchAll(/^ {2}(\S+)\s+(http:\/\/\S+)$/gm)) endpoints.set(m[1]!, m[2]!);
      if ([...expected.keys()].every((k) => endpoints.has(k)) && out.includes('Ctrl-C stops everything'))
        break;
      await sleep(200);
    }
    expect([...endpoints.keys()].sort(), out).toEqual([...expected.keys()].sort());
    for (const [name, port] of expected) expect(endpoints.get(name)).toBe(`http://127.0.0.1:${port}`);
    expect(out).toMatch(/is up in \d+\.\ds/);

    const api = await fetch(`${endpoints.get('api')}/healthz`);
    expect(api.status).toBe(200);
    const jobs = await fetch(
      `${endpoints.get('scheduler')}/v1/projects/demo-proxyplane/locations/us-central1/jobs`,
    );
    expect(((await jobs.json()) as { jobs: unknown[] }).jobs.length).toBeGreaterThan(0);
    expect(await (await fetch(endpoints.get('pubsub')!)).text()).toContain('Ok');

    tree = processTree(npm.pid!);
    expect(tree.filter(alive)).toHaveLength(tree.length); // the liveness probe sees them all now
    expect(tree.filter((p) => p.comm === 'java').length, JSON.stringify(tree)).toBeGreaterThanOrEqual(2);
    expect(tree.filter((p) => p.comm === 'node').length).toBeGreaterThanOrEqual(2 + built.length); // plane + api + functions

    process.kill(-npm.pid!, 'SIGINT');
    const exit = await Promise.race([exited, sleep(40_000).then(() => 'timeout')]);
    // npm re-raises the SIGINT it got; the plane itself must have stopped cleanly.
    expect(['0/null', 'null/SIGINT', '130/null'], out).toContain(exit);
    expect(out).toMatch(/SIGINT: stopping[\s\S]*stopped in/);
    expect(out).not.toContain('failed to stop');
    const stopBy = Date.now() + 10_000;
    while (tree.some(alive) && Date.now() < stopBy) await sleep(100);
    expect(tree.filter(alive)).toEqual([]);
  }, 120_000);
});
