// One probe through a forward proxy, on a fresh connection every time (seed §6: keep-alive would cache the
// CONNECT tunnel and later probes would never re-test the proxy). An http URL is an absolute-URI GET through
// the proxy; an https URL is CONNECT, then TLS inside the tunnel, then GET.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export interface ProbeTarget {
  host: string;
  port: number;
  /** "user:pass", resolved from the proxy's Secret Manager reference; never logged. */
  credentials?: string | null;
}

export interface ProbeOptions {
  url: string;
  timeoutMs: number;
  expectedStatus: number;
  /** Read at most this much of the body (the EGRESS tier parses the echo response). */
  maxBodyBytes?: number;
  /** Local targets use self-signed certificates; production keeps verification on. */
  rejectUnauthorized?: boolean;
}

export type ProbeStage = 'DIAL' | 'PROXY_HANDSHAKE' | 'RESPONSE_HEADERS' | 'BODY';

export interface ProbeResult {
  ok: boolean;
  latencyMs: number;
  status: number | null;
  body: string | null;
  /** Where it failed, and a stable code (never an error message with addresses or secrets). */
  failure: { stage: ProbeStage; code: string } | null;
}

export async function probeThroughProxy(target: ProbeTarget, opts: ProbeOptions): Promise<ProbeResult> {
  const started = performance.now();
  const url = new URL(opts.url);
  const auth = target.credentials ? `Basic ${Buffer.from(target.credentials).toString('base64')}` : undefined;
  const finish = (r: Omit<ProbeResult, 'latencyMs'>): ProbeResult => ({
    ...r,
    latencyMs: Math.round(performance.now() - started),
  });
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  try {
    const res =
      url.protocol === 'https:'
        ? await viaConnect(target, url, auth, opts, deadline)
        : await viaAbsoluteUri(target, url, auth, deadline);
    const body = await readBody(res.message, opts.maxBodyBytes ?? 64 * 1024, deadline);
    const ok = res.message.statusCode === opts.expectedStatus;
    return finish({
      ok,
      status: res.message.statusCode ?? null,
      body,
      failure: ok ? null : { stage: 'RESPONSE_HEADERS', code: `unexpected_status_${res.message.statusCode}` },
    });
  } catch (err) {
    const f = err instanceof ProbeFailure ? err : new ProbeFailure('DIAL', errorCode(err, deadline));
    return finish({ ok: false, status: null, body: null, failure: { stage: f.stage, code: f.code } });
  }
}

class ProbeFailure extends Error {
  constructor(
    readonly stage: ProbeStage,
    readonly code: string,
  ) {
    super(`${stage}: ${code}`);
  }
}

/**
 * The failure code of a socket or request error. `timeout` whenever the probe's own deadline has fired,
 * whatever the abort surfaced as: Node reports a request aborted by its signal as an AbortError
 * (`ABORT_ERR`) and a response cut mid-body as ECONNRESET — neither says "timeout" by itself.
 */
function errorCode(err: unknown, deadline: AbortSignal): string {
  if (deadline.aborted || (err instanceof Error && err.name === 'TimeoutError')) return 'timeout';
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' ? code.toLowerCase() : 'error';
}

function viaAbsoluteUri(target: ProbeTarget, url: URL, auth: string | undefined, signal: AbortSignal) {
  return new Promise<{ message: IncomingMessage }>((resolve, reject) => {
    const req = httpRequest({
      host: target.host,
      port: target.port,
      method: 'GET',
      path: url.href,
      agent: false,
      signal,
      headers: { host: url.host, connection: 'close', ...(auth ? { 'proxy-authorization': auth } : {}) },
    });
    let connected = false;
    req.on('socket', (s: Socket) => s.once('connect', () => (connected = true)));
    req.on('response', (message) => {
      if (message.statusCode === 407)
        return reject(failAndDrain(message, 'PROXY_HANDSHAKE', 'proxy_auth_required'));
      resolve({ message });
    });
    req.on('error', (err) =>
      reject(new ProbeFailure(connected ? 'RESPONSE_HEADERS' : 'DIAL', errorCode(err, signal))),
    );
    req.end();
  });
}

function viaConnect(
  target: ProbeTarget,
  url: URL,
  auth: string | undefined,
  opts: ProbeOptions,
  signal: AbortSignal,
) {
  const authority = `${url.hostname}:${url.port || 443}`;
  return new Promise<{ message: IncomingMessage }>((resolve, reject) => {
    const req = httpRequest({
      host: target.host,
      port: target.port,
      method: 'CONNECT',
      path: authority,
      agent: false,
      signal,
      headers: { host: authority, ...(auth ? { 'proxy-authorization': auth } : {}) },
    });
    let connected = false;
    req.on('socket', (s: Socket) => s.once('connect', () => (connected = true)));
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        const code = res.statusCode === 407 ? 'proxy_auth_required' : `connect_status_${res.statusCode}`;
        return reject(new ProbeFailure('PROXY_HANDSHAKE', code));
      }
      const tls = tlsConnect({
        socket,
        servername: url.hostname,
        rejectUnauthorized: opts.rejectUnauthorized ?? true,
      });
      tls.once('error', (err) => reject(new ProbeFailure('RESPONSE_HEADERS', errorCode(err, signal))));
      const inner = httpRequest({
        createConnection: () => tls,
        method: 'GET',
        path: `${url.pathname}${url.search}`,
        signal,
        headers: { host: url.host, connection: 'close' },
      });
      inner.on('response', (message) => resolve({ message }));
      inner.on('error', (err) => reject(new ProbeFailure('RESPONSE_HEADERS', errorCode(err, signal))));
      inner.end();
    });
    req.on('response', (message) =>
      reject(failAndDrain(message, 'PROXY_HANDSHAKE', `connect_status_${message.statusCode}`)),
    );
    req.on('error', (err) =>
      reject(new ProbeFailure(connected ? 'PROXY_HANDSHAKE' : 'DIAL', errorCode(err, signal))),
    );
    req.end();
  });
}

function failAndDrain(message: IncomingMessage, stage: ProbeStage, code: string): ProbeFailure {
  message.resume();
  message.socket?.destroy();
  return new ProbeFailure(stage, code);
}

async function readBody(message: IncomingMessage, limit: number, signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of message as AsyncIterable<Buffer>) {
      if (signal.aborted) throw new ProbeFailure('BODY', 'timeout');
      size += chunk.length;
      if (size > limit) break;
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof ProbeFailure) throw err;
    throw new ProbeFailure('BODY', errorCode(err, signal));
  } finally {
    message.socket?.destroy();
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The BASIC tier without a probe URL: TCP connect to the proxy and a CONNECT handshake, nothing more. */
export async function handshakeThroughProxy(
  target: ProbeTarget,
  authority: string,
  timeoutMs: number,
): Promise<ProbeResult> {
  const started = performance.now();
  const auth = target.credentials ? `Basic ${Buffer.from(target.credentials).toString('base64')}` : undefined;
  const done = (failure: ProbeResult['failure'], status: number | null): ProbeResult => ({
    ok: failure === null,
    latencyMs: Math.round(performance.now() - started),
    status,
    body: null,
    failure,
  });
  const deadline = AbortSignal.timeout(timeoutMs);
  return new Promise<ProbeResult>((resolve) => {
    const req = httpRequest({
      host: target.host,
      port: target.port,
      method: 'CONNECT',
      path: authority,
      agent: false,
      signal: deadline,
      headers: { host: authority, ...(auth ? { 'proxy-authorization': auth } : {}) },
    });
    let connected = false;
    req.on('socket', (s: Socket) => s.once('connect', () => (connected = true)));
    req.on('connect', (res, socket) => {
      socket.destroy();
      if (res.statusCode === 200) return resolve(done(null, 200));
      const code = res.statusCode === 407 ? 'proxy_auth_required' : `connect_status_${res.statusCode}`;
      resolve(done({ stage: 'PROXY_HANDSHAKE', code }, res.statusCode ?? null));
    });
    req.on('response', (res) => {
      res.socket?.destroy();
      resolve(
        done({ stage: 'PROXY_HANDSHAKE', code: `connect_status_${res.statusCode}` }, res.statusCode ?? null),
      );
    });
    req.on('error', (err) =>
      resolve(done({ stage: connected ? 'PROXY_HANDSHAKE' : 'DIAL', code: errorCode(err, deadline) }, null)),
    );
    req.end();
  });
}
