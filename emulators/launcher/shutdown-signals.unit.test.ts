// The launchers' stop triggers, in a child process: a reader that goes away (its end of the stdout and
// stderr pipes closed) stops the launcher once, quietly — it used to report each failed write to the
// same closed pipes, which failed again, a loop at 100 % CPU that never stopped the plane.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'shutdown-signals-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('onShutdown', () => {
  it('output closed → one quiet shutdown, no loop of failed reports', async () => {
    const calls = join(dir, 'calls');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `
        import { appendFileSync } from 'node:fs';
        const { onShutdown } = await import(${JSON.stringify(join(import.meta.dirname, 'shutdown-signals.ts'))});
        // A teardown that takes a while, as the plane's does, writing as it goes.
        onShutdown((why) => {
          appendFileSync(${JSON.stringify(calls)}, why + '\\n');
          console.log('stopping: ' + why);
          setTimeout(() => process.exit(0), 300);
        });
        setInterval(() => console.log('progress'), 5);
        `,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.stdout.destroy();
    child.stderr.destroy();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    const reasons = readFileSync(calls, 'utf8').trim().split('\n');
    expect(reasons[0]).toBe('output closed');
    expect(reasons.length).toBeLessThanOrEqual(3);
  }, 20_000);

  it('its parent killed outright (kill -9 of npm) → one shutdown, "parent gone"', async () => {
    const calls = join(dir, 'orphan-calls');
    const launcher = `
      import { appendFileSync } from 'node:fs';
      const { onShutdown } = await import(${JSON.stringify(join(import.meta.dirname, 'shutdown-signals.ts'))});
      onShutdown((why) => {
        appendFileSync(${JSON.stringify(calls)}, why + '\\n');
        setTimeout(() => process.exit(0), 100);
      });
      appendFileSync(${JSON.stringify(calls)}, 'up\\n');
      setInterval(() => {}, 1000);
    `;
    // npm's place: starts the launcher and stays, until it is killed with no chance to pass anything on.
    const npm = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
        import { spawn } from 'node:child_process';
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', ${JSON.stringify(launcher)}], { stdio: 'ignore' });
        console.log(child.pid);
        setInterval(() => {}, 1000);
        `,
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const launcherPid = Number(
      await new Promise<string>((resolve) => npm.stdout.once('data', (d) => resolve(String(d)))),
    );
    const read = () => {
      try {
        return readFileSync(calls, 'utf8').trim().split('\n');
      } catch {
        return [];
      }
    };
    const gone = () => {
      try {
        process.kill(launcherPid, 0);
        return false;
      } catch {
        return true;
      }
    };
    try {
      await expect.poll(read, { timeout: 15_000 }).toEqual(['up']);
      npm.kill('SIGKILL');
      await expect.poll(read, { timeout: 10_000 }).toEqual(['up', 'parent gone']);
      await expect.poll(gone, { timeout: 5_000 }).toBe(true);
    } finally {
      // Failing, it would outlive the run: its interval keeps it up.
      npm.kill('SIGKILL');
      if (!gone()) process.kill(launcherPid, 'SIGKILL');
    }
  }, 40_000);
});
