// startGroup's log capture and start failures, with real child processes: the log must hold everything a
// child wrote on both streams whatever order they close in, and a binary that cannot run must be a plain
// throw — not an 'error' event that kills the launcher a tick later.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startGroup } from '../../emulators/launcher/process-group.js';

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

  it('throws at once when the log file cannot be opened', () => {
    expect(() =>
      startGroup({ name: 'x', command: 'true', args: [], logFile: join(dir, 'missing-dir', 'x.log') }),
    ).toThrow(/ENOENT/);
  });
});
