// A Node child the local plane starts runs in its own process group, detached from its parent: if the
// parent is SIGKILLed (no handler runs), the child must still stop by itself — with real processes.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PARENT_PID_ENV } from '../../emulators/launcher/process-group.js';

/**
 * Whether `pid` still runs. An orphan that has exited stays a zombie until whatever adopted it reaps it
 * (PID 1 here is a sandbox's agent, not an init): kill(pid, 0) still succeeds on a zombie, so its state
 * is read from /proc.
 */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // The state follows the parenthesised command name, which may itself hold spaces.
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()?.[0] !== 'Z';
  } catch {
    return false;
  }
};

/** Whether `pid` has exited within `ms` (polled every 100 ms). */
async function goneWithin(pid: number, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 100) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !alive(pid);
}

/** A parent process running `script` (an ES module, under tsx), and what it has printed so far. */
function parentRunning(script: string) {
  const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  parent.stdout.on('data', (d: Buffer) => {
    out += d;
  });
  return { parent, printed: () => out };
}

/** Starts a parent that starts `childScript` with startReadyProcess and prints the child's pid. */
async function parentWithChild(childScript: string) {
  const script = `
    import { startReadyProcess } from ${JSON.stringify(join(process.cwd(), 'emulators/functions-host/ready-process.ts'))};
    const p = await startReadyProcess({
      name: 'child',
      command: process.execPath,
      args: ['-e', ${JSON.stringify(childScript)}],
      ready: () => new Promise((r) => setTimeout(r, 300)),
    });
    console.log('child ' + p.pid);
    setInterval(() => {}, 1000);
  `;
  const { parent, printed } = parentRunning(script);
  let child = 0;
  for (let i = 0; i < 300 && !child; i++) {
    child = Number(/child (\d+)/.exec(printed())?.[1] ?? 0);
    if (!child) await new Promise((r) => setTimeout(r, 100));
  }
  return { parent, child };
}

describe('startReadyProcess', () => {
  it("an orphaned child's graceful stop runs to its end: it is asked once, not killed by a second SIGTERM", async () => {
    // Like the gateway and the API (process.once('SIGTERM', drain)): a drain longer than the preload's
    // one-second poll. A second SIGTERM would meet no handler any more and end the process mid-drain.
    const dir = mkdtempSync(join(tmpdir(), 'pp-orphan-'));
    const marker = join(dir, 'drained');
    const { parent, child } = await parentWithChild(`
      process.once('SIGTERM', () => setTimeout(() => {
        require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ok');
        process.exit(0);
      }, 2500));
      setInterval(() => {}, 1000);
    `);
    expect(child).toBeGreaterThan(0);
    try {
      parent.kill('SIGKILL');
      await once(parent, 'exit');
      expect(await goneWithin(child, 20_000)).toBe(true);
      expect(existsSync(marker)).toBe(true);
    } finally {
      if (alive(child)) process.kill(-child, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('a child whose parent died before the preload ran still stops, gracefully: it outlives the parent it is named', async () => {
    // On a loaded machine Node's start-up outlasts a parent's readiness wait: killed meanwhile, the
    // parent is gone before the child reads its ppid, which is then its adoptive parent's. Here the named
    // parent is a process that has already exited; the child's actual parent (this runner) lives on.
    const gone = spawn('true');
    await once(gone, 'exit');
    const dir = mkdtempSync(join(tmpdir(), 'pp-orphan-early-'));
    const marker = join(dir, 'drained');
    const child = spawn(
      process.execPath,
      [
        '--import',
        new URL('../../emulators/launcher/exit-with-parent.mjs', import.meta.url).href,
        '-e',
        `process.once('SIGTERM', () => {
          require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ok');
          process.exit(0);
        });
        console.log('inherited ' + process.env.${PARENT_PID_ENV});
        setInterval(() => {}, 1000);`,
      ],
      { env: { ...process.env, [PARENT_PID_ENV]: String(gone.pid) }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
    });
    try {
      expect(child.pid).toBeGreaterThan(0);
      const [code] = await Promise.race([
        once(child, 'exit'),
        new Promise<[string]>((r) => setTimeout(() => r(['still running']), 20_000)),
      ]);
      expect(code).toBe(0);
      expect(existsSync(marker)).toBe(true);
      // What the child starts does not inherit a parent that is not its own.
      expect(out).toContain('inherited undefined');
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('a group that is not Node (a shell and what it started) stops too, under its group leader', async () => {
    // The emulators' JVMs: the Pub/Sub emulator's shell wrapper starts java. Left behind by a SIGKILLed
    // npm start (or a test run interrupted past its teardown) they held their ports, and the next start
    // failed with "port in use" while no plane ran.
    const dir = mkdtempSync(join(tmpdir(), 'pp-orphan-group-'));
    const pids = join(dir, 'pids');
    const script = `
      import { startGroup } from ${JSON.stringify(join(process.cwd(), 'emulators/launcher/process-group.ts'))};
      const g = startGroup({
        name: 'jvm-like',
        command: 'sh',
        // The second member ignores SIGTERM: only the leader's SIGKILL ends it.
        args: ['-c', '(trap "" TERM; exec sleep 600) & echo "$$ $!" > ${pids}; wait'],
        exitWithParent: true,
      });
      console.log('group ' + g.pid);
      setInterval(() => {}, 1000);
    `;
    const { parent, printed } = parentRunning(script);
    let leader = 0;
    let started: number[] = [];
    for (let i = 0; i < 300 && started.length < 2; i++) {
      leader = Number(/group (\d+)/.exec(printed())?.[1] ?? 0);
      if (existsSync(pids)) started = readFileSync(pids, 'utf8').trim().split(' ').map(Number);
      if (started.length < 2) await new Promise((r) => setTimeout(r, 100));
    }
    try {
      expect(leader).toBeGreaterThan(0);
      expect(started).toHaveLength(2);
      const [shell, sleep] = started as [number, number];
      expect([alive(leader), alive(shell), alive(sleep)]).toEqual([true, true, true]);
      parent.kill('SIGKILL');
      await once(parent, 'exit');
      for (const pid of [sleep, shell, leader]) expect(await goneWithin(pid, 20_000)).toBe(true);
    } finally {
      try {
        // The group may outlive its leader: that is the failure this guards against.
        if (leader) process.kill(-leader, 'SIGKILL');
      } catch {
        // ESRCH: the group is gone.
      }
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('a Node child stops within seconds of its parent being killed outright', async () => {
    // The parent starts a child that would otherwise run forever, prints its pid, and waits.
    const { parent, child } = await parentWithChild('setInterval(() => {}, 1000)');
    expect(child).toBeGreaterThan(0);
    try {
      expect(alive(child)).toBe(true);
      parent.kill('SIGKILL');
      await once(parent, 'exit');
      // The preload polls its parent once a second; the rest of the bound is for a loaded machine.
      expect(await goneWithin(child, 15_000)).toBe(true);
    } finally {
      if (alive(child)) process.kill(-child, 'SIGKILL');
    }
  }, 60_000);
});
