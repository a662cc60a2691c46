// startGroup's log capture, start failures and stop, with real child processes: the log must hold
// everything a child wrote on both streams whatever order they close in, a binary that cannot run must be
// a plain throw — not an 'error' event that kills the launcher a tick later —, and stop() must signal the
// group while it exists and never once its id may belong to someone else.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startGroup } from '../../emulators/launcher/process-group.js';
import { pollUntil } from '../support/poll.js';

const dir = mkdtempSync(join(tmpdir(), 'process-group-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('startGroup', () => {
  it('keeps stderr written after stdout closed (the usual shape of a crash report)', async () => {
    // Bounded: a handful of runs, each a child that closes stdout, waits, then writes ~20 KB to stderr.
    for (let i = 0; i < 5; i++) {
      const logFile = join(dir, `late-stderr-${i}.log`);
      const g = startGroup({
        name: 'late-stderr',
        command: 'sh',
        args: [
          '-c',
          'echo out; exec 1>&-; sleep 0.05; head -c 20000 /dev/zero | tr "\\0" e >&2; echo END >&2',
        ],
        logFile,
      });
      await once(g.child, 'exit');
      const text = readFileSync(logFile, 'utf8');
      expect(text.startsWith('out\n')).toBe(true);
      expect(text).toHaveLength(4 + 20_000 + 4);
      expect(text.endsWith('END\n')).toBe(true);
    }
  });

  it('throws for a missing binary and emits nothing that would crash the process later', async () => {
    // In a child Node process so that an unhandled 'error' event shows up as its exit code.
    const script = `
      import { startGroup } from ${JSON.stringify(join(process.cwd(), 'emulators/launcher/process-group.ts'))};
      try {
        startGroup({ name: 'ghost', command: '/nonexistent/emulator', args: [], logFile: ${JSON.stringify(join(dir, 'ghost.log'))} });
        console.log('started?!');
      } catch (err) {
        console.log('threw: ' + err.message);
      }
      await new Promise((r) => setTimeout(r, 200));
      console.log('still alive');
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d;
    });
    const [code] = await once(child, 'exit');
    expect(out).toContain('threw: could not start ghost');
    expect(out).toContain('still alive');
    expect(code).toBe(0);
  });

  it("signals no group once the leader exited with its group empty: its id may be another group's by now", async () => {
    // In a child Node process, whose process.kill is wrapped to record the calls (this worker's stays as is).
    const script = `
      import { once } from 'node:events';
      import { startGroup } from ${JSON.stringify(join(process.cwd(), 'emulators/launcher/process-group.ts'))};
      const g = startGroup({ name: 'brief', command: 'true', args: [] });
      await once(g.child, 'exit');
      const calls = [];
      const kill = process.kill.bind(process);
      process.kill = (pid, sig) => {
        calls.push([pid, sig ?? 'SIGTERM']);
        return kill(pid, sig);
      };
      await g.stop(100);
      console.log(JSON.stringify(calls.filter(([pid, sig]) => pid === -g.pid && sig !== 0)));
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
    });
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual([]);
  });

  it('still stops a group that outlives its leader (the JVM its wrapper started)', async () => {
    const logFile = join(dir, 'orphan.log');
    const g = startGroup({ name: 'wrapper', command: 'sh', args: ['-c', 'sleep 30 & echo $!'], logFile });
    await once(g.child, 'exit');
    const sleeper = Number(readFileSync(logFile, 'utf8').trim());
    expect(running(sleeper)).toBe(true);
    await g.stop(1000);
    await pollUntil(
      () => running(sleeper),
      (r) => !r,
      5_000,
      'the group member to be gone',
    );
  });

  it('throws at once when the log file cannot be opened', () => {
    expect(() =>
      startGroup({ name: 'x', command: 'true', args: [], logFile: join(dir, 'missing-dir', 'x.log') }),
    ).toThrow(/ENOENT/);
  });
});

/** Alive and not a zombie (one killed but not yet reaped by whoever adopted it). */
function running(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return false;
  return readFileSync(stat, 'utf8').split(') ')[1]?.[0] !== 'Z';
}
