// Ctrl-C (SIGINT) on the `proxyplane` CLI as a user's shell sends it: a real process (bin/proxyplane.mjs).
// `fleet watch` ends between two rounds, exit 0 (docs/cli.md); every other command stops at once, as Ctrl-C
// means — before, the CLI's own SIGINT handler (there for the watch) swallowed it, so a command waiting on
// an API that does not answer ran on to its 30 s timeout, and an `apply` kept writing the rest of its file.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../shared/src/config/local-ports.js';

const sockets = new Set<Socket>();
let connected: () => void = () => {};
// Accepts and never answers: the CLI is inside its call when the first connection arrives.
const silent: Server = createServer((s) => {
  sockets.add(s);
  s.on('error', () => {}); // a CLI killed mid-call may reset its connection: no failure of this test's
  connected();
});
const requests: string[] = [];
// The fleet page's state, as small as its schema (FleetState) allows.
const fleet = createHttpServer((req, res) => {
  requests.push(`${req.method} ${req.url}`);
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ rows: [], phases: {}, jobs: [], generatedAt: new Date().toISOString() }));
});

const listen = (s: Server) =>
  new Promise<string>((r) =>
    s.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${(s.address() as { port: number }).port}`)),
  );
const urls = { silent: '', fleet: '' };

beforeAll(async () => {
  urls.silent = await listen(silent);
  urls.fleet = await listen(fleet);
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all([silent, fleet].map((s) => new Promise((r) => s.close(r))));
});

interface Exit {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** The CLI as a process: `printed` resolves on its first output on stdout, `done` when it has exited. */
function start(args: string[]): { child: ChildProcess; printed: Promise<void>; done: Promise<Exit> } {
  const child = spawn(process.execPath, [join(repoRoot, 'bin/proxyplane.mjs'), ...args], {
    env: { PATH: '/usr/bin:/bin', METADATA_SERVER_DETECTION: 'none', PROXYPLANE_ADMIN_TOKEN: 'abc' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const printed = new Promise<void>((r) => child.stdout!.once('data', () => r()));
  child.stdout!.on('data', (b: Buffer) => {
    stdout += b;
  });
  child.stderr!.on('data', (b: Buffer) => {
    stderr += b;
  });
  const done = new Promise<Exit>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, printed, done };
}

describe('Ctrl-C on the CLI', () => {
  it('stops a command waiting on an API that does not answer, as Ctrl-C does (killed by SIGINT)', async () => {
    const inCall = new Promise<void>((r) => (connected = r));
    const { child, done } = start(['proxies', 'list', '--api', urls.silent]);
    await inCall;
    child.kill('SIGINT');
    const r = await done;
    // Not run on to its timeout and reported as an unreachable API.
    expect(r.stderr).not.toContain('unreachable');
    expect(r.code === 130 || r.signal === 'SIGINT', JSON.stringify(r)).toBe(true);
    expect(r.stdout).toBe('');
  });

  // docs/cli.md: `--api` and `-o` may come before the command too. The watch was told apart by argv[0], so
  // `proxyplane --api URL fleet watch` was killed by Ctrl-C (status 130: a calling script stops) instead.
  it.each([
    ['after the command', (api: string) => ['fleet', 'watch', '--interval', '3600', '--api', api]],
    ['before the command', (api: string) => ['--api', api, 'fleet', 'watch', '--interval', '3600']],
  ])('ends `fleet watch` between rounds, exit 0, with --api %s', async (_where, argv) => {
    requests.length = 0;
    const { child, printed, done } = start(argv(urls.fleet));
    // The round's table is out: the watch now sleeps for the interval.
    await printed;
    child.kill('SIGINT');
    const r = await done;
    expect(r).toMatchObject({ code: 0, signal: null });
    expect(r.stdout).toContain('0 proxies');
    expect(requests).toEqual(['GET /fleet/api/state']);
  });

  // Not Ctrl-C, but the same end: `proxyplane fleet watch | head -5` once head has its lines. The command's
  // output is dropped once its reader has gone (an apply runs on to the end of its file); the watch, with
  // nobody to show its rounds to, ends instead of polling the API every interval for nothing.
  it('ends `fleet watch` when the reader of its output has gone, exit 0', async () => {
    requests.length = 0;
    const { child, done } = start(['fleet', 'watch', '--interval', '3600', '--api', urls.fleet]);
    child.stdout!.destroy();
    const r = await done;
    expect(r).toMatchObject({ code: 0, signal: null, stderr: '' });
    expect(requests).toEqual(['GET /fleet/api/state']);
  });
});
