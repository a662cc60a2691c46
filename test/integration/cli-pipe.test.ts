// The `proxyplane` CLI writing into a pipe whose reader has gone (`proxyplane … | head -1` once head has its
// line): the rest of the output has nowhere to go, which is no failure of the command — a real process
// (bin/proxyplane.mjs). Before, the write's EPIPE was an unhandled 'error' event: exit 1 and a stack trace.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../shared/src/config/local-ports.js';

describe('proxyplane writing into a closed pipe', () => {
  it('ends quietly with its own exit code, no stack trace', async () => {
    const cli = spawn(process.execPath, [join(repoRoot, 'bin/proxyplane.mjs'), '--help'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The reader is gone before the CLI writes a byte.
    cli.stdout.destroy();
    let stderr = '';
    cli.stderr.on('data', (d: Buffer) => {
      stderr += d;
    });
    // A CLI that hangs is killed before the test's own timeout, not left behind it: SIGKILL fails the check.
    const bound = setTimeout(() => cli.kill('SIGKILL'), 20_000);
    const [code, signal] = (await once(cli, 'exit').finally(() => clearTimeout(bound))) as [
      number | null,
      NodeJS.Signals | null,
    ];
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' });
  }, 30_000);

  it('a failure told into a closed stderr still exits with its own code', async () => {
    // An unknown command: a usage error (exit 2) written to stderr only, whose reader is gone.
    const cli = spawn(process.execPath, [join(repoRoot, 'bin/proxyplane.mjs'), 'no-such-command'], {
      cwd: repoRoot,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    cli.stderr.destroy();
    const bound = setTimeout(() => cli.kill('SIGKILL'), 20_000);
    const [code, signal] = (await once(cli, 'exit').finally(() => clearTimeout(bound))) as [
      number | null,
      NodeJS.Signals | null,
    ];
    expect({ code, signal }).toEqual({ code: 2, signal: null });
  }, 30_000);
});
