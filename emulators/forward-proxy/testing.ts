// Client-side helpers for tests that talk through a forward proxy (this one, an emulated instance's,
// the gateway's) to local targets: absolute-form requests, CONNECT tunnels, TLS inside a tunnel, and
// echo targets (plain and HTTPS with a throwaway self-signed certificate made by openssl).
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { makeSelfSignedCert } from '../demo-target/certificate.js';

export interface ProxyAddress {
  host: string;
  port: number;
}

export interface ProxyCredentials {
  user: string;
  pass: string;
}

export const basicAuth = (c: ProxyCredentials) =>
  `Basic ${Buffer.from(`${c.user}:${c.pass}`).toString('base64')}`;

export interface SimpleResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One absolute-form request through the proxy, on a fresh connection. */
export function requestViaProxy(
  proxy: ProxyAddress,
  url: string,
  opts: {
    auth?: ProxyCredentials;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    timeoutMs?: number;
  } = {},
): Promise<SimpleResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.auth) headers['Proxy-Authorization'] = basicAuth(opts.auth);
    const req = request({
      host: proxy.host,
      port: proxy.port,
      method: opts.method ?? 'GET',
      path: url,
      headers,
      agent: false,
      timeout: opts.timeoutMs ?? 5000,
    });
    req.once('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
      res.once('error', reject);
    });
    req.end(opts.body);
  });
}

/** Sends CONNECT and reads the proxy's answer head; on 200 the socket is the open tunnel. */
export function connectViaProxy(
  proxy: ProxyAddress,
  authority: string,
  opts: { auth?: ProxyCredentials; timeoutMs?: number } = {},
): Promise<{ status: number; head: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: proxy.host, port: proxy.port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(Object.assign(new Error('CONNECT timed out'), { code: 'ETIMEDOUT' }));
    }, opts.timeoutMs ?? 5000);
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      clearTimeout(timer);
      socket.off('data', onData);
      socket.pause();
      const head = buffered.subarray(0, end).toString('latin1');
      const rest = buffered.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve({ status: Number(head.split(' ')[1]), head, socket });
    };
    socket.on('data', onData);
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.once('connect', () => {
      const auth = opts.auth ? `Proxy-Authorization: ${basicAuth(opts.auth)}\r\n` : '';
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`);
    });
  });
}

/** Reads a socket to its end. */
export function readAll(socket: Socket, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => reject(new Error('read timed out')), timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.once('end', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString());
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.resume();
  });
}

/** GET over TLS inside a CONNECT tunnel (what a crawler does for https:// URLs). */
export async function httpsGetViaProxy(
  proxy: ProxyAddress,
  target: { host: string; port: number; path: string; ca: string; servername?: string },
  auth?: ProxyCredentials,
): Promise<{ status: number; body: string }> {
  const tunnel = await connectViaProxy(proxy, `${target.host}:${target.port}`, { auth });
  if (tunnel.status !== 200) {
    tunnel.socket.destroy();
    throw Object.assign(new Error(`CONNECT answered ${tunnel.status}`), { status: tunnel.status });
  }
  const tls = tlsConnect({
    socket: tunnel.socket,
    ca: target.ca,
    servername: target.servername ?? 'localhost',
  });
  await new Promise<void>((resolve, reject) => {
    tls.once('secureConnect', resolve);
    tls.once('error', reject);
  });
  tls.write(`GET ${target.path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  const raw = await readAll(tls as unknown as Socket);
  const end = raw.indexOf('\r\n\r\n');
  return { status: Number(raw.slice(9, 12)), body: raw.slice(end + 4) };
}

export interface EchoRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
  remoteAddress: string;
}

export interface EchoTarget {
  host: string;
  port: number;
  url: string;
  seen: EchoRequest[];
  server: Server;
  close(): Promise<void>;
}

/** Answers every request with JSON describing it; `/slow` never answers (for vanishing clients). */
function echoHandler(seen: EchoRequest[]) {
  return (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: EchoRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString(),
        remoteAddress: req.socket.remoteAddress ?? '',
      };
      seen.push(entry);
      if (req.url?.startsWith('/slow')) return;
      const text = JSON.stringify(entry);
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    });
  };
}

const listen = (server: Server, host: string) =>
  new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      const addr = server.address();
      resolve(typeof addr === 'object' && addr ? addr.port : 0);
    });
  });

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

export async function startEchoTarget(host = '127.0.0.1'): Promise<EchoTarget> {
  const seen: EchoRequest[] = [];
  const server = createHttpServer(echoHandler(seen));
  const port = await listen(server, host);
  return { host, port, url: `http://${host}:${port}`, seen, server, close: () => closeServer(server) };
}

/** A self-signed certificate for localhost and 127.0.0.1, made with openssl in a temp dir. */
export async function selfSignedCert(): Promise<{ key: string; cert: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'proxyplane-cert-'));
  try {
    const { key, cert } = await makeSelfSignedCert(dir, 1);
    return { key, cert };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function startTlsEchoTarget(
  tls: { key: string; cert: string },
  host = '127.0.0.1',
): Promise<EchoTarget & { ca: string }> {
  const seen: EchoRequest[] = [];
  const server = createHttpsServer({ key: tls.key, cert: tls.cert }, echoHandler(seen));
  const port = await listen(server as unknown as Server, host);
  return {
    host,
    port,
    url: `https://${host}:${port}`,
    seen,
    server: server as unknown as Server,
    ca: tls.cert,
    close: () => closeServer(server as unknown as Server),
  };
}

/** Polls `check` until it holds or `timeoutMs` passes (then throws with `what`). */
export async function eventually(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
