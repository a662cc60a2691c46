// `npm run emulator:compute` runs the emulator on its own: prints its URL, serves the API and the
// admin endpoint, and stops cleanly on SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';

let child: ChildProcess | undefined;

afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
});

function firstLineMatching(proc: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} in: ${seen}`)), timeoutMs);
    proc.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const line = seen.split('\n').find((l) => pattern.test(l));
      if (line) {
        clearTimeout(timer);
        resolve(line);
      }
    });
  });
}

describe('emulator:compute', () => {
  it('prints its URL, serves, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    // exactly the npm script's command, run directly so the exit status is the emulator's own
    const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { scripts: Record<string, string> };
    const [command, ...args] = pkg.scripts['emulator:compute']!.split(' ');
    expect(command).toBe('node');
    child = spawn(process.execPath, [...args, '--port', String(port), '--boot-delay-ms', '50'], {
      env: { ...process.env, METADATA_SERVER_DETECTION: 'none' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await firstLineMatching(child, /^compute emulator: http:\/\//, 30_000);
    expect(line).toContain(`http://127.0.0.1:${port}`);
    expect(line).toContain(`COMPUTE_EMULATOR_HOST=127.0.0.1:${port}`);

    const health = await fetch(`http://127.0.0.1:${port}/admin/healthz`);
    expect(await health.json()).toEqual({ ok: true });
    const list = await fetch(
      `http://127.0.0.1:${port}/compute/v1/projects/any/zones/us-central1-a/instances`,
    );
    expect(await list.json()).toMatchObject({ kind: 'compute#instanceList' });

    child.kill('SIGTERM');
    const [code, signal] = await once(child, 'exit');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    await expect(fetch(`http://127.0.0.1:${port}/admin/healthz`)).rejects.toThrow();
  });
});
