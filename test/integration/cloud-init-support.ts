// Real processes for the cloud-init tests: the rendered script run by bash (its functions sourced with
// PROXYPLANE_STARTUP_LIBRARY=1), a fake GCE metadata server, and squid on a rendered configuration.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type GroupProcess, startGroup } from '../../emulators/launcher/process-group.js';
import { tempDir } from '../support/temp-dirs.js';

export function scratchDir(prefix: string): string {
  const dir = tempDir(prefix);
  // squid drops to the `proxy` user and must reach its logs and password file in here.
  chmodSync(dir, 0o755);
  return dir;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Sources `scriptFile` without running main, then runs `commands` (bash) with `env` only. */
export function runScriptFunctions(
  scriptFile: string,
  commands: string,
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `source "$0"; ${commands}`, scriptFile], {
      // A clean environment: no inherited http_proxy could reroute the script's curl calls.
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: tmpdir(),
        PROXYPLANE_STARTUP_LIBRARY: '1',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface FakeMetadata {
  url: string;
  /** The instance attribute proxyplane-credentials-secret; undefined → 404 like a missing item. */
  credentialsSecret: string | undefined;
  guestAttributes: Map<string, string>;
  /** Requests without `Metadata-Flavor: Google` (the real server refuses them). */
  refused: number;
  stop(): Promise<void>;
}

/** The GCE metadata server subset the startup script reads (computeMetadata/v1). */
export async function startFakeMetadata(token: string): Promise<FakeMetadata> {
  const state = {
    credentialsSecret: undefined as string | undefined,
    guestAttributes: new Map(),
    refused: 0,
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      if (req.headers['metadata-flavor'] !== 'Google') {
        state.refused += 1;
        return void res.writeHead(403).end('Missing Metadata-Flavor:Google header.');
      }
      const path = (req.url ?? '').replace(/^\/computeMetadata\/v1\//, '');
      if (path === 'instance/attributes/proxyplane-credentials-secret') {
        if (state.credentialsSecret === undefined) return void res.writeHead(404).end('not found');
        return void res.writeHead(200, { 'content-type': 'application/text' }).end(state.credentialsSecret);
      }
      if (path === 'instance/service-accounts/default/token') {
        const json = JSON.stringify({ access_token: token, expires_in: 3599, token_type: 'Bearer' });
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(json);
      }
      if (req.method === 'PUT' && path.startsWith('instance/guest-attributes/')) {
        state.guestAttributes.set(path.slice('instance/guest-attributes/'.length), body);
        return void res.writeHead(200).end();
      }
      res.writeHead(404).end('not found');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/computeMetadata/v1`,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  });
}

/** squid -N on `conf` (plus test-only log and pid locations), under its own service name. */
export async function startSquid(
  dir: string,
  name: string,
  conf: string,
  port: number,
): Promise<GroupProcess> {
  // squid drops to `proxy` before it opens its logs: give it a directory of its own it can write.
  const runtime = join(dir, name);
  mkdirSync(runtime);
  chmodSync(runtime, 0o777);
  const file = join(dir, `${name}.conf`);
  const overrides = [
    `pid_filename ${join(runtime, 'squid.pid')}`,
    `cache_log ${join(runtime, 'cache.log')}`,
    `access_log stdio:${join(runtime, 'access.log')}`,
  ];
  writeFileSync(file, `${conf}\n${overrides.join('\n')}\n`);
  const stderr = join(dir, `${name}-stderr.log`);
  const squid = startGroup({ name, command: 'squid', args: ['-N', '-n', name, '-f', file], logFile: stderr });
  try {
    await untilAnswering(squid, port, stderr);
    return squid;
  } catch (err) {
    await squid.stop(2_000);
    throw err;
  }
}

async function untilAnswering(squid: GroupProcess, port: number, stderr: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (squid.child.exitCode !== null) {
      throw new Error(`squid exited: ${readFileSync(stderr, 'utf8').split('\n').slice(-8).join('\n')}`);
    }
    // Ready once it answers anything (an error page for a request that is not a proxy request).
    const res = await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined);
    if (res) {
      await res.body?.cancel();
      return;
    }
    await sleep(100);
  }
  throw new Error(`squid did not answer on ${port} within 30 s`);
}
