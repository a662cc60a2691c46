// Test helpers around a real gateway process in standalone mode: start it on ephemeral ports (read back
// from its "gateway listening" log line), read /healthz, send raw bytes, open CONNECT tunnels.
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { SINGLE_THREADED_GC } from '../../functions/gateway/src/gc-threads.js';
import { tempDir } from '../../test/support/temp-dirs.js';
import { repoRoot } from './harness.js';

export interface GatewayProcess {
  readonly child: ChildProcess;
  readonly proxyPort: number;
  readonly httpPort: number;
  readonly snapshotPath: string;
  readonly logs: string[];
  readonly exited: Promise<number | null>;
  health(): Promise<Health>;
  /** The JSON log lines so far. */
  logEntries(): Array<Record<string, unknown>>;
  metrics(): Promise<string>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface Health {
  phase: string;
  accepting: boolean;
  sockets: { proxyClients: number; upstreams: number; httpClients: number };
  load: { active: number; reserved: number };
  snapshot: { version: number; ownershipEpoch: number; proxies: number } | null;
  control?: Record<string, unknown>;
}

export const basicAuth = (user: string, pass: string) =>
  `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

/** Standalone mode over a snapshot file written to a temp dir. */
export async function startGateway(
  snapshot: unknown,
  env: Record<string, string> = {},
): Promise<GatewayProcess> {
  const dir = tempDir('gw-test-');
  const snapshotPath = join(dir, 'snapshot.json');
  writeFileSync(snapshotPath, JSON.stringify(snapshot));
  return spawnGateway(['--snapshot', snapshotPath], env, snapshotPath);
}

/** Any mode (controller mode: pass CONTROL_PLANE_URL and friends in `env`), on ephemeral ports. */
export async function spawnGateway(
  args: string[],
  env: Record<string, string>,
  snapshotPath = '',
): Promise<GatewayProcess> {
  const { line, ...p } = await spawnGatewayUntil(args, env, 'gateway listening');
  const ports = { proxyPort: line.proxyPort as number, httpPort: line.httpPort as number };
  const base = `http://127.0.0.1:${ports.httpPort}`;
  return {
    ...p,
    ...ports,
    snapshotPath,
    health: async () => (await (await fetch(`${base}/healthz`)).json()) as Health,
    metrics: async () => (await fetch(`${base}/metrics`)).text(),
  };
}

/** A gateway process that may not be listening yet: what spawnGatewayUntil answers. */
export type StartingGateway = Pick<GatewayProcess, 'child' | 'logs' | 'exited' | 'logEntries' | 'stop'>;

/**
 * Spawns the gateway on ephemeral ports and resolves at its first log line with `message` (that line
 * parsed under `line`): `gateway listening`, or an earlier step of start-up ("registered with the control
 * plane", to signal it during its start wait). `nodeArgs`: Node's own flags, by default those Terraform
 * starts the gateway with (functions/gateway/src/gc-threads.ts).
 */
export async function spawnGatewayUntil(
  args: string[],
  env: Record<string, string>,
  message: string,
  nodeArgs: readonly string[] = [SINGLE_THREADED_GC],
  startTimeoutMs = 30_000,
): Promise<StartingGateway & { line: Record<string, unknown> }> {
  const child = spawn(
    process.execPath,
    [...nodeArgs, '--import', 'tsx', join(repoRoot, 'functions/gateway/src/main.ts'), ...args],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: '0',
        GATEWAY_PROXY_PORT: '0',
        LOG_LEVEL: 'info',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const logs: string[] = [];
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const line = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let pending = '';
    // A gateway that never says `message` is killed and reaped before the rejection: left running, it
    // would hold its ports and outlive the test run.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
      void exited.then(() =>
        reject(new Error(`gateway (pid ${child.pid}) did not start; killed:\n${logs.join('\n')}`)),
      );
    }, startTimeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      let nl = pending.indexOf('\n');
      while (nl >= 0) {
        const text = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        logs.push(text);
        try {
          const j = JSON.parse(text) as Record<string, unknown>;
          if (j.message === message) {
            clearTimeout(timer);
            resolve(j);
          }
        } catch {}
        nl = pending.indexOf('\n');
      }
    });
    child.stderr!.on('data', (c: Buffer) => logs.push(c.toString()));
    void exited.then((code) => {
      if (timedOut) return; // the start timeout's kill: that rejects, with its reason
      clearTimeout(timer);
      reject(new Error(`gateway exited (${code}) before "${message}":\n${logs.join('\n')}`));
    });
  });
  return {
    child,
    line,
    logs,
    exited,
    logEntries: () =>
      logs.flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
}

/** Sends raw bytes, returns everything received until the server closes (or the timeout). */
export function rawExchange(
  port: number,
  bytes: string | Buffer,
  opts: { endAfterWrite?: boolean; timeoutMs?: number } = {},
): Promise<{ text: string; closedBy: 'server' | 'timeout'; ms: number }> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const chunks: Buffer[] = [];
    const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let done = false;
    const finish = (closedBy: 'server' | 'timeout') => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closedBy, ms: Date.now() - t0 });
    };
    const timer = setTimeout(() => finish('timeout'), opts.timeoutMs ?? 5_000);
    s.on('data', (c) => chunks.push(c));
    s.on('end', () => finish('server'));
    s.on('close', () => finish('server'));
    s.on('error', () => finish('server'));
    s.write(bytes);
    if (opts.endAfterWrite) s.end();
  });
}

/**
 * POST /v1/fetch with Node's client, the body read whole as latin1: fetch() cannot do what these tests need
 * (it has a 16 KiB head limit of its own, and turns any 407 into a network error outside a browser).
 */
export function postFetch(
  port: number,
  request: Record<string, unknown>,
  auth: string,
  timeoutMs: number,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/fetch',
        headers: { 'content-type': 'application/json', 'proxy-authorization': auth },
        maxHeaderSize: 65_536,
        timeout: timeoutMs,
      },
      (res) => {
        let body = '';
        res.setEncoding('latin1');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(JSON.stringify(request));
  });
}

/** A CONNECT tunnel through the proxy listener: resolves with the socket once 200 came back. */
export function openTunnel(port: number, authority: string, auth: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    let buf = '';
    const onData = (c: Buffer) => {
      buf += c.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      s.off('data', onData);
      if (!buf.startsWith('HTTP/1.1 200')) {
        s.destroy();
        reject(new Error(`tunnel refused: ${buf.slice(0, end)}`));
        return;
      }
      s.pause();
      if (end + 4 < buf.length) s.unshift(Buffer.from(buf.slice(end + 4), 'latin1'));
      resolve(s);
    };
    s.on('data', onData);
    s.on('error', reject);
    s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${auth}\r\n\r\n`);
  });
}

/** Polls until `check` passes or the time is up (then returns the last value for the assertion). */
export async function eventually<T>(
  read: () => Promise<T>,
  check: (v: T) => boolean,
  ms = 5_000,
): Promise<T> {
  const end = Date.now() + ms;
  let v = await read();
  while (!check(v) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    v = await read();
  }
  return v;
}
