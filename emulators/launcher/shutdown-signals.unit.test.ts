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
});
