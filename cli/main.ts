// The `proxyplane` CLI's entry point (bin/proxyplane.mjs loads it through tsx): the real process, env,
// terminal and clock around runCli. Ctrl-C ends a `fleet watch` between two rounds.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { tokenSources } from './config.js';
import type { Io } from './context.js';
import { runCli } from './run.js';

const interrupt = new AbortController();
process.once('SIGINT', () => interrupt.abort());

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const io: Io = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  isTTY: process.stdout.isTTY === true,
  columns: process.stdout.columns || 120,
  readStdin,
  readFile: (path) => readFile(path, 'utf8'),
  now: () => new Date(),
  sleep: (ms, signal) => sleep(ms, undefined, { signal }).catch(() => {}),
  interrupted: interrupt.signal,
};

process.exitCode = await runCli(process.argv.slice(2), {
  io,
  env: process.env,
  tokens: tokenSources(process.env),
});
