// The `proxyplane` CLI's entry point (bin/proxyplane.mjs loads it through tsx): the real process, env,
// terminal and clock around runCli. Ctrl-C ends a `fleet watch` at once (a round's request in flight is
// aborted), exit 0; any other command it stops at once, as Ctrl-C does.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { hoistGlobalFlags } from './args.js';
import { tokenSources } from './config.js';
import type { Io } from './context.js';
import { runCli } from './run.js';

const argv = process.argv.slice(2);
const interrupt = new AbortController();
// Only the watch ends on its own when interrupted. Any other command must not swallow Ctrl-C: it would run
// on (an `apply` writing the rest of its file, an acquire leasing a proxy nobody will use, a call to an API
// that does not answer waiting out its request timeout) and exit as if nothing had been asked.
// Read as runCli reads it: `--api` and `-o` may come before the command (`proxyplane --api URL fleet watch`).
const [group, verb] = hoistGlobalFlags(argv);
const watching = group === 'fleet' && verb === 'watch';
process.once('SIGINT', () => {
  interrupt.abort();
  // The handler is gone (once): the signal again ends the process as SIGINT does by default, so a
  // calling shell sees a command killed by Ctrl-C (and stops a loop around it).
  if (!watching) process.kill(process.pid, 'SIGINT');
});

// A reader that stops early (`proxyplane proxies list -o json | head -1`) closes the pipe: the rest of the
// output has nowhere to go, which is no failure of the command. Unhandled, the write's EPIPE crashed the
// process with a stack trace on stderr. The command itself runs on, its output dropped, and exits with its
// own code: an `apply` that exited here (as it once did, with 0) left the rest of its file unwritten
// unseen. A `fleet watch` has nobody left to show its rounds to: it ends, as on Ctrl-C.
let stdoutGone = false;
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  stdoutGone = true;
  if (watching) interrupt.abort();
});
// The same for stderr (`proxyplane … 2>&1 | head -1`): a message nobody reads is dropped, and the command
// still exits with its own code — unhandled, the EPIPE made every failure exit 1 with a stack trace.
let stderrGone = false;
process.stderr.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  stderrGone = true;
});

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const io: Io = {
  out: (text) => {
    if (!stdoutGone) process.stdout.write(`${text}\n`);
  },
  err: (text) => {
    if (!stderrGone) process.stderr.write(`${text}\n`);
  },
  clearScreen: () => {
    if (!stdoutGone) process.stdout.write('\x1b[H\x1b[2J');
  },
  isTTY: process.stdout.isTTY === true,
  columns: process.stdout.columns || 120,
  terminalSize: () => ({ rows: process.stdout.rows || 24, columns: process.stdout.columns || 120 }),
  readStdin,
  readFile: (path) => readFile(path, 'utf8'),
  now: () => new Date(),
  sleep: (ms, signal) => sleep(ms, undefined, { signal }).catch(() => {}),
  interrupted: interrupt.signal,
};

process.exitCode = await runCli(argv, {
  io,
  env: process.env,
  tokens: tokenSources(process.env),
});
