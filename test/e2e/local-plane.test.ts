// `npm start` for real: with a port offset (so it runs beside a developer's plane) and --no-demo, every
// endpoint line appears (within a bound, 150 s: on a loaded box a start is not timed) and answers; SIGINT to its process group (what Ctrl-C does) stops it,
// and no process of its tree survives, java included.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { functionInventory } from '../../emulators/local-plane/functions.js';
import { adviceOffset } from '../../emulators/local-plane/layout.js';
import { LOCAL_PROJECT_NUMBER } from '../../emulators/local-plane/our-emulators.js';
import { offsetPorts } from '../../emulators/local-plane/ports.js';
import { PLANE_ENTRY } from '../../emulators/local-plane/state-file.js';
import { loadLocalPorts, repoRoot } from '../../shared/src/config/local-ports.js';
import { loadFunctionTable } from '../../shared/src/config/topology.js';
import { freeOffset } from '../support/npm-start.js';

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

interface NpmStart {
  npm: ChildProcess;
  output(): string;
  /** `code/signal` once npm exits. */
  exited: Promise<string>;
}

function npmStart(offset: number, stateDir: string, extraEnv: NodeJS.ProcessEnv = {}): NpmStart {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PROXYPLANE_PORT_OFFSET: String(offset),
    PROXYPLANE_STATE_DIR: stateDir,
    ...extraEnv,
  };
  for (const k of ['FIRESTORE_EMULATOR_HOST', 'PUBSUB_EMULATOR_HOST', 'GOOGLE_CLOUD_PROJECT']) delete env[k];
  // detached: its own process group, as a shell job is; SIGINT to the group is what Ctrl-C sends.
  const npm = spawn('npm', ['start', '--', '--no-demo'], { cwd: repoRoot, env, detached: true });
  let out = '';
  npm.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  npm.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<string>((resolve) =>
    npm.once('exit', (code, signal) => resolve(`${code}/${signal}`)),
  );
  return { npm, output: () => out, exited };
}

async function waitForOutput(
  run: NpmStart,
  done: (out: string) => boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && run.npm.exitCode === null && !done(run.output())) await sleep(100);
}

describe('npm start', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'local-plane-e2e-'));
  const runs: NpmStart[] = [];
  const tracked: Proc[] = [];

  /** A start expected to be refused at once: it exits 1 within a minute; the run, for its output. */
  async function refusedStart(offset: number, stateDir: string): Promise<NpmStart> {
    const run = npmStart(offset, stateDir);
    runs.push(run);
    const exit = await Promise.race([run.exited, sleep(60_000).then(() => 'timeout')]);
    expect(exit, run.output()).toBe('1/null');
    return run;
  }

  /** A server holding `at`'s port, as something else on the box would; `close` lets it go. */
  async function holdPort(at: { host: string; port: number }): Promise<{ close: () => Promise<unknown> }> {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen({ host: at.host, port: at.port }, resolve));
    return { close: () => new Promise((resolve) => holder.close(resolve)) };
  }

  /** A live process whose command line is the plane's, as `npm start`'s node: a running plane to refuse. */
  async function runningPlane(): Promise<ChildProcess> {
    const plane = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', PLANE_ENTRY], {
      stdio: 'ignore',
    });
    await new Promise((resolve) => plane.once('spawn', resolve));
    return plane;
  }

  /**
   * Ctrl-C to npm's group (SIGINT), or `kill` of npm's pid alone (SIGTERM), then: npm ends, the plane says
   * it stopped cleanly, and nothing is left of `tree` nor of what joined it before npm exited (a plane
   * signalled mid-start goes on spawning until it hears the signal). `first` is tracked by the caller.
   */
  async function stopAndCheck(run: NpmStart, first: Proc[], signal: 'SIGINT' | 'SIGTERM'): Promise<void> {
    process.kill(signal === 'SIGINT' ? -run.npm.pid! : run.npm.pid!, signal);
    const tree = new Map(first.map((p) => [`${p.pid}/${p.startTime}`, p]));
    // Bounded by the start steps' own timeouts: a step registers what it started only once it is up, so a
    // signal during one waits for it (the emulators' JVMs give up at once: seconds; more on a loaded box).
    let exit: string | undefined;
    const exited = Promise.race([run.exited, sleep(90_000).then(() => 'timeout')]).then((e) => {
      exit = e;
    });
    while (exit === undefined) {
      for (const p of processTree(run.npm.pid!)) {
        if (!tree.has(`${p.pid}/${p.startTime}`)) tracked.push(p);
        tree.set(`${p.pid}/${p.startTime}`, p);
      }
      await Promise.race([exited, sleep(50)]);
    }
    // npm re-raises the signal it got; the plane itself must have stopped cleanly.
    const code = signal === 'SIGINT' ? '130/null' : '143/null';
    expect(['0/null', `null/${signal}`, code], run.output()).toContain(exit);
    expect(run.output()).toMatch(new RegExp(`${signal}: stopping[\\s\\S]*stopped in`));
    expect(run.output()).not.toContain('failed to stop');
    const left = [...tree.values()];
    const stopBy = Date.now() + 10_000;
    while (left.some(alive) && Date.now() < stopBy) await sleep(100);
    expect(left.filter(alive)).toEqual([]);
  }

  afterAll(async () => {
    // Only if a test failed half-way (an assertion before its own Ctrl-C): stop what is left of our own
    // runs as a user would, Ctrl-C to the group, so the plane stops its emulators' JVMs — they run in
    // process groups of their own, which a SIGKILL of npm's group never reaches, and a plane killed
    // outright leaves them running, orphaned on their ports. Whatever of a run's tree outlives that
    // (taken before the signal, by pid and start time) is killed.
    const left = runs.filter(({ npm }) => npm.pid && npm.exitCode === null && npm.signalCode === null);
    await Promise.all(
      left.map(async (run) => {
        const tree = processTree(run.npm.pid!);
        try {
          process.kill(-run.npm.pid!, 'SIGINT');
        } catch {
          // already gone
        }
        await Promise.race([run.exited, sleep(60_000)]);
        const stopBy = Date.now() + 10_000;
        while (tree.some(alive) && Date.now() < stopBy) await sleep(100);
        tracked.push(...tree);
      }),
    );
    for (const p of tracked.filter(alive)) process.kill(p.pid, 'SIGKILL');
    for (const { npm } of left) {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(stateDir, { recursive: true, force: true });
  }, 90_000);

  it('prints every endpoint, serves them, and leaves no process after SIGINT', async () => {
    const offset = await freeOffset();
    const ports = offsetPorts(loadLocalPorts(), offset);
    const built = functionInventory(loadFunctionTable()).built.map((f) => f.name);
    const expected = new Map<string, number>([
      ['firestore', ports.firestore.port],
      ['pubsub', ports.pubsub.port],
      ['compute', ports.compute.port],
      ['secretmanager', ports.secretmanager.port],
      ['scheduler', ports.scheduler.port],
      ['api', ports.api.port],
      ['gateway', ports.gateway.httpPort],
      ['gateway-proxy', ports.gateway.proxyPort],
      ...built.map((n) => [`function:${n}`, ports.functions.ports[n]!] as [string, number]),
    ]);

    const run = npmStart(offset, stateDir);
    runs.push(run);
    // Bounded, not timed: how long a start takes on a loaded 2-core box is no property of the plane.
    await waitForOutput(run, (out) => out.includes('Ctrl-C stops everything'), 150_000);
    const out = run.output();
    const endpoints = new Map([...out.matchAll(/^ {2}(\S+)\s+(http:\/\/\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    expect([...endpoints.keys()].sort(), out).toEqual([...expected.keys()].sort());
    for (const [name, port] of expected) expect(endpoints.get(name)).toBe(`http://127.0.0.1:${port}`);
    expect(out).toMatch(/is up in \d+\.\ds/);

    const api = await fetch(`${endpoints.get('api')}/healthz`);
    expect(api.status).toBe(200);
    // The API runs with the admin token the plane made and printed; without it, admin calls are refused.
    const token = /export PROXYPLANE_ADMIN_TOKEN=(\S{16,})/.exec(out)?.[1];
    expect(token, out).toBeDefined();
    const list = (auth?: string) =>
      fetch(`${endpoints.get('api')}/v1/proxies`, {
        headers: auth ? { authorization: `Bearer ${auth}` } : {},
      });
    expect((await list(token)).status).toBe(200);
    expect((await list()).status).toBe(401);
    const jobs = await fetch(
      `${endpoints.get('scheduler')}/v1/projects/demo-proxyplane/locations/us-central1/jobs`,
    );
    const scheduled = ((await jobs.json()) as { jobs: Array<{ name: string }> }).jobs;
    expect(scheduled.length).toBeGreaterThan(0);
    // The API's /v1/jobs reaches that scheduler (SCHEDULER_EMULATOR_HOST) through @google-cloud/scheduler.
    const controls = await fetch(`${endpoints.get('api')}/v1/jobs`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(controls.status).toBe(200);
    const listed = ((await controls.json()) as { jobs: Array<{ resource: string; state: string }> }).jobs;
    expect(listed.map((j) => j.resource).sort()).toEqual(scheduled.map((j) => j.name).sort());
    expect(listed.every((j) => j.state === 'ENABLED')).toBe(true);
    expect(await (await fetch(endpoints.get('pubsub')!)).text()).toContain('Ok');
    // Secret Manager as deployed: roles granted per secret, so one that does not exist (deleted) is
    // PERMISSION_DENIED, not NOT_FOUND (which reconcile would take for a revoked version); every name it
    // answers carries the project's number.
    const secrets = `${endpoints.get('secretmanager')}/v1/projects/demo-proxyplane/secrets`;
    expect((await fetch(`${secrets}/no-such-secret`)).status).toBe(403);
    const created = await fetch(`${secrets}?secretId=e2e-numbered`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ replication: { automatic: {} } }),
    });
    expect(((await created.json()) as { name?: string }).name).toBe(
      `projects/${LOCAL_PROJECT_NUMBER}/secrets/e2e-numbered`,
    );

    const tree = processTree(run.npm.pid!);
    tracked.push(...tree);
    expect(tree.filter(alive)).toHaveLength(tree.length); // the liveness probe sees them all now
    expect(tree.filter((p) => p.comm === 'java').length, JSON.stringify(tree)).toBeGreaterThanOrEqual(2);
    expect(tree.filter((p) => p.comm === 'node').length).toBeGreaterThanOrEqual(2 + built.length); // plane + api + functions
    await stopAndCheck(run, tree, 'SIGINT');
  }, 330_000);

  // A supervisor (systemd, `timeout`, docker stop, a CI step, `kill $PID`) signals npm's pid alone, not the
  // group. npm forwards SIGINT/SIGTERM to its child only — the `sh -c` of the script, which (dash) waits
  // out a SIGINT and dies of a SIGTERM — so unless the script execs node, the plane never hears it and
  // keeps running, orphaned, on the fixed ports. The signal comes once the emulators answer: whether npm
  // passes it on does not depend on how far the start got, and the test above already waits for a whole
  // start (a second one here cost the suite most of a minute of two busy cores).
  it('stops cleanly when only npm itself gets SIGTERM', async () => {
    const run = npmStart(await freeOffset(), stateDir);
    runs.push(run);
    // Bounded, not timed: how long a start takes on a loaded 2-core box is no property of the plane.
    await waitForOutput(run, (out) => out.includes('Firestore and Pub/Sub emulators up'), 150_000);
    const tree = processTree(run.npm.pid!);
    tracked.push(...tree);
    expect(tree.filter((p) => p.comm === 'java').length, JSON.stringify(tree)).toBeGreaterThanOrEqual(2);
    await stopAndCheck(run, tree, 'SIGTERM');
  }, 270_000);

  it('leaves no process when interrupted while the emulators are starting', async () => {
    const run = npmStart(await freeOffset(), stateDir);
    runs.push(run);
    await waitForOutput(run, (out) => out.includes('starting the Firestore and Pub/Sub emulators'), 60_000);
    let tree: Proc[] = [];
    // The JVMs are spawned right after that line (through gcloud's launcher, seconds on a loaded box);
    // take the tree once they are in it.
    for (let i = 0; i < 500 && tree.filter((p) => p.comm === 'java').length < 2; i++) {
      await sleep(20);
      tree = processTree(run.npm.pid!);
    }
    tracked.push(...tree);
    expect(tree.filter((p) => p.comm === 'java').length, JSON.stringify(tree)).toBe(2);
    expect(run.output()).not.toContain('Firestore and Pub/Sub emulators up');
    await stopAndCheck(run, tree, 'SIGINT');
  }, 180_000);

  it('stops at once when interrupted while the emulators are not coming up', async () => {
    // A Java that runs (`-version`) but whose emulators never answer: a wedged JVM start. Ctrl-C must not
    // wait out the emulators' readiness timeout (60 s) before stopping.
    const jdk = mkdtempSync(join(tmpdir(), 'wedged-jdk-'));
    mkdirSync(join(jdk, 'bin'));
    writeFileSync(join(jdk, 'bin', 'java'), '#!/bin/sh\n[ "$1" = -version ] && exit 0\nexec sleep 600\n', {
      mode: 0o755,
    });
    try {
      const run = npmStart(await freeOffset(), stateDir, { JAVA_HOME: jdk });
      runs.push(run);
      await waitForOutput(run, (out) => out.includes('starting the Firestore and Pub/Sub emulators'), 60_000);
      let tree: Proc[] = [];
      for (let i = 0; i < 500 && tree.filter((p) => p.comm === 'sleep').length < 1; i++) {
        await sleep(20);
        tree = processTree(run.npm.pid!);
      }
      tracked.push(...tree);
      expect(
        tree.some((p) => p.comm === 'sleep'),
        JSON.stringify(tree),
      ).toBe(true);
      process.kill(-run.npm.pid!, 'SIGINT');
      // Far under the 60 s readiness timeout it used to wait out, far over a stop's few seconds.
      const exit = await Promise.race([run.exited, sleep(25_000).then(() => 'still running')]);
      expect(exit, run.output()).not.toBe('still running');
      expect(run.output()).toMatch(/SIGINT: stopping[\s\S]*stopped in/);
      const stopBy = Date.now() + 10_000;
      while (tree.some(alive) && Date.now() < stopBy) await sleep(100);
      expect(tree.filter(alive)).toEqual([]);
    } finally {
      rmSync(jdk, { recursive: true, force: true });
    }
  }, 120_000);

  // A second `npm start` beside a running plane is refused for its ports; the plane that runs must keep
  // its state.json, where the CLI finds its tokens (`npx proxyplane proxies list` with no setup).
  it("a start refused for a taken port leaves the running plane's state.json alone", async () => {
    const offset = await freeOffset();
    const ports = offsetPorts(loadLocalPorts(), offset);
    const dir = mkdtempSync(join(tmpdir(), 'local-plane-e2e-taken-'));
    const stateFile = join(dir, 'state.json');
    // What the running plane wrote, and its API port, held. Its pid names a process gone: where no /proc
    // says what a live pid runs (macOS), any live one counts as a plane and the state dir would be refused
    // first — this is the port's refusal.
    const gone = spawn(process.execPath, ['-e', '']);
    const pid = gone.pid!;
    await new Promise((resolve) => gone.once('exit', resolve));
    const running = `${JSON.stringify({ pid, projectId: 'demo-proxyplane', portOffset: offset, env: { PROXYPLANE_API_URL: `http://127.0.0.1:${ports.api.port}` } })}\n`;
    writeFileSync(stateFile, running);
    const holder = await holdPort(ports.api);
    try {
      const run = await refusedStart(offset, dir);
      expect(run.output()).toContain(
        `port ${ports.api.port} on 127.0.0.1 (firebase.json emulators.api.port) is already in use`,
      );
      expect(readFileSync(stateFile, 'utf8')).toBe(running);
    } finally {
      await holder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  // The same checkout, another port offset, but the same state dir: the second plane would clear the first
  // one's logs and take its state.json. It is refused before it touches anything, with what to set.
  it("refuses a second plane on a running plane's state dir, and says which variable to set", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'local-plane-e2e-shared-'));
    const stateFile = join(dir, 'state.json');
    // The running plane: a live process whose command line is the plane's, as `npm start`'s node.
    const plane = await runningPlane();
    const running = `${JSON.stringify({ pid: plane.pid, projectId: 'demo-proxyplane', portOffset: 0 })}\n`;
    writeFileSync(stateFile, running);
    mkdirSync(join(dir, 'logs'));
    writeFileSync(join(dir, 'logs', 'api.log'), "the running plane's log\n");
    try {
      const offset = await freeOffset();
      const run = await refusedStart(offset, dir);
      expect(run.output()).toContain(`another local plane (pid ${plane.pid}, port offset 0) is running`);
      expect(run.output()).toContain(
        `PROXYPLANE_STATE_DIR=.local-plane/${offset} PROXYPLANE_PORT_OFFSET=${offset} npm start`,
      );
      expect(run.output()).not.toContain('starting the Firestore and Pub/Sub emulators');
      expect(readFileSync(stateFile, 'utf8')).toBe(running);
      expect(readFileSync(join(dir, 'logs', 'api.log'), 'utf8')).toBe("the running plane's log\n");
    } finally {
      plane.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  // The usual way to meet a running plane: `npm start` again in the same checkout, same offset. Its ports
  // are taken too, but what to set is both variables, and an offset other than the running plane's.
  it('a second start beside a running plane is told so first, with an offset other than its', async () => {
    const offset = await freeOffset();
    const ports = offsetPorts(loadLocalPorts(), offset);
    const dir = mkdtempSync(join(tmpdir(), 'local-plane-e2e-again-'));
    const plane = await runningPlane();
    writeFileSync(
      join(dir, 'state.json'),
      `${JSON.stringify({ pid: plane.pid, projectId: 'demo-proxyplane', portOffset: offset })}\n`,
    );
    const holder = await holdPort(ports.api);
    try {
      const run = await refusedStart(offset, dir);
      expect(run.output()).toContain(
        `another local plane (pid ${plane.pid}, port offset ${offset}) is running`,
      );
      const other = adviceOffset(offset, offset, dir);
      expect(run.output()).toContain(
        `PROXYPLANE_STATE_DIR=.local-plane/${other} PROXYPLANE_PORT_OFFSET=${other} npm start`,
      );
      expect(run.output()).not.toContain('is already in use');
    } finally {
      plane.kill('SIGKILL');
      await holder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
