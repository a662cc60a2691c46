// One probe through a forward proxy, on a fresh connection every time (seed §6: keep-alive would cache the
// CONNECT tunnel and later probes would never re-test the proxy). Through an HTTP proxy, an http URL is an
// absolute-URI GET; an https URL is CONNECT, then TLS inside the tunnel, then GET. Through a SOCKS5 proxy,
// either is a SOCKS5 CONNECT to the URL's host:port (socks5-connect.ts), then the GET — inside TLS for https.
// A proxy whose endpoint host is a DNS name is dialled through the prober's resolver (proxyProber: c-ares,
// ../dns-resolve.ts), not dns.lookup: getaddrinfo runs on libuv's four pool threads, and a few look-ups
// stuck on one provider's silent nameserver held them all — every other proxy entered by name failed its
// DIAL with `timeout` until the system resolver gave up. The look-up is part of the dial: the check's
// deadline ends it as it ends a connect (DIAL `timeout`). What the check sends is about the target, never
// the proxy's address: the Host header, the CONNECT authority and the SNI stay as they were.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { ProxyProtocol } from '../../domain/proxy.js';
import { deadlineSignal } from '../deadline-signal.js';
import { type DialLookup, lookupOption, lookupVia, type Resolve } from '../dns-resolve.js';
import { errorCode, ProbeFailure, type ProbeStage } from './probe-failure.js';
import { socks5Connect } from './socks5-connect.js';

export type { ProbeStage } from './probe-failure.js';

export interface ProbeTarget {
  host: string;
  port: number;
  /** "user:pass", resolved from the proxy's Secret Manager reference; never logged. */
  credentials?: string | null;
  /** What the proxy speaks (spec.protocol, or an external endpoint's); absent: http. */
  protocol?: ProxyProtocol;
}

export interface ProbeOptions {
  url: string;
  timeoutMs: number;
  expectedStatus: number;
  /** Read at most this much of the body (the EGRESS tier parses the echo response). */
  maxBodyBytes?: number;
  /** Local targets use self-signed certificates; production keeps verification on. */
  rejectUnauthorized?: boolean;
  /** Ends the check at once when aborted (a probe pass that gave up waiting), as its deadline would. */
  cancel?: AbortSignal;
  /**
   * How the proxy's host is resolved when it is a DNS name (an IP literal is dialled as it is); absent:
   * dns.lookup, getaddrinfo on libuv's pool. The deployed prober passes dnsResolve's (proxyProber).
   */
  lookup?: DialLookup;
}

/**
 * The three checks with `resolve` resolving every proxy's host that is a name (the probe function's
 * wiring: c-ares on the event loop, so look-ups stuck on one silent nameserver cannot hold the others).
 */
export function proxyProber(resolve: Resolve) {
  const lookup = lookupVia(resolve);
  return {
    probe: (target: ProbeTarget, opts: ProbeOptions) => probeThroughProxy(target, { ...opts, lookup }),
    handshake: (target: ProbeTarget, authority: string, timeoutMs: number, cancel?: AbortSignal) =>
      handshakeThroughProxy(target, authority, timeoutMs, cancel, lookup),
    // Through no proxy: the echo URL's host, one name of the operator's own, fetched as it always was.
    direct: fetchDirect,
  };
}

/** A check cancelled before it starts: no connection at all (a request would dial before it saw the abort). */
const CANCELLED: ProbeResult = {
  ok: false,
  latencyMs: 0,
  status: null,
  body: null,
  failure: { stage: 'DIAL', code: 'cancelled' },
};

export interface ProbeResult {
  ok: boolean;
  latencyMs: number;
  status: number | null;
  body: string | null;
  /** Where it failed, and a stable code (never an error message with addresses or secrets). */
  failure: { stage: ProbeStage; code: string } | null;
  /**
   * The address the connection to the proxy reached (the socket's peer): the proxy's own address even when
   * its endpoint host is a DNS name, which is what the EGRESS tier compares the exit address with. Null
   * or absent when no connection was made.
   */
  proxyAddress?: string | null;
}

export async function probeThroughProxy(target: ProbeTarget, opts: ProbeOptions): Promise<ProbeResult> {
  if (opts.cancel?.aborted) return CANCELLED;
  const started = performance.now();
  const url = new URL(opts.url);
  const auth = target.credentials ? `Basic ${Buffer.from(target.credentials).toString('base64')}` : undefined;
  const finish = (r: Omit<ProbeResult, 'latencyMs'>): ProbeResult => ({
    ...r,
    latencyMs: Math.round(performance.now() - started),
  });
  const deadline = deadlineSignal(opts.timeoutMs, opts.cancel);
  const dialed: Dialed = { address: null };
  try {
    const res =
      target.protocol === 'socks5'
        ? await viaSocks5(target, url, opts, deadline, dialed)
        : url.protocol === 'https:'
          ? await viaConnect(target, url, auth, opts, deadline, dialed)
          : await viaAbsoluteUri(target, url, auth, opts, deadline, dialed);
    const body = await readBody(res.message, opts.maxBodyBytes ?? 64 * 1024, deadline);
    const ok = res.message.statusCode === opts.expectedStatus;
    return finish({
      ok,
      status: res.message.statusCode ?? null,
      body,
      failure: ok ? null : { stage: 'RESPONSE_HEADERS', code: `unexpected_status_${res.message.statusCode}` },
      proxyAddress: dialed.address,
    });
  } catch (err) {
    const f = err instanceof ProbeFailure ? err : new ProbeFailure('DIAL', errorCode(err, deadline));
    return finish({
      ok: false,
      status: null,
      body: null,
      failure: { stage: f.stage, code: f.code },
      proxyAddress: dialed.address,
    });
  }
}

/** Where the connection to the proxy went, once it is connected (ProbeResult.proxyAddress). */
interface Dialed {
  address: string | null;
}

function viaAbsoluteUri(
  target: ProbeTarget,
  url: URL,
  auth: string | undefined,
  opts: ProbeOptions,
  signal: AbortSignal,
  dialed: Dialed,
) {
  return new Promise<{ message: IncomingMessage }>((resolve, reject) => {
    const req = httpRequest({
      host: target.host,
      port: target.port,
      method: 'GET',
      path: url.href,
      agent: false,
      signal,
      ...lookupOption(opts.lookup),
      headers: { host: url.host, connection: 'close', ...(auth ? { 'proxy-authorization': auth } : {}) },
    });
    let connected = false;
    req.on('socket', (s: Socket) =>
      s.once('connect', () => {
        connected = true;
        dialed.address = s.remoteAddress ?? null;
      }),
    );
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
  dialed: Dialed,
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
      ...lookupOption(opts.lookup),
      headers: { host: authority, ...(auth ? { 'proxy-authorization': auth } : {}) },
    });
    let connected = false;
    req.on('socket', (s: Socket) =>
      s.once('connect', () => {
        connected = true;
        dialed.address = s.remoteAddress ?? null;
      }),
    );
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        const code = res.statusCode === 407 ? 'proxy_auth_required' : `connect_status_${res.statusCode}`;
        return reject(new ProbeFailure('PROXY_HANDSHAKE', code));
      }
      requestInside(socket, url, opts, signal).then(resolve, reject);
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

/** Through a SOCKS5 proxy: CONNECT to the URL's host:port, then the request as to the site itself. */
async function viaSocks5(
  target: ProbeTarget,
  url: URL,
  opts: ProbeOptions,
  signal: AbortSignal,
  dialed: Dialed,
) {
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1'); // an IPv6 literal goes as ATYP 4, unbracketed
  const socket = await socks5Connect(target, { host, port }, signal, opts.timeoutMs, opts.lookup);
  dialed.address = socket.remoteAddress ?? null;
  return requestInside(socket, url, opts, signal);
}

/**
 * The GET over a tunnel to the site (CONNECT or SOCKS5): origin-form, inside TLS for an https URL. Any
 * failure here is past the proxy's handshake: RESPONSE_HEADERS.
 */
function requestInside(socket: Socket, url: URL, opts: ProbeOptions, signal: AbortSignal) {
  return new Promise<{ message: IncomingMessage }>((resolve, reject) => {
    const fail = (err: unknown) => reject(new ProbeFailure('RESPONSE_HEADERS', errorCode(err, signal)));
    let stream: Socket = socket;
    if (url.protocol === 'https:') {
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      const tls = tlsConnect({
        socket,
        // What the certificate is checked against: the site, never the proxy the socket was dialled to
        // (without `host`, Node checks the socket's own host — the proxy's address). SNI carries names
        // only (RFC 6066 §3): an IP literal target gets none.
        host,
        ...(isIP(host) ? {} : { servername: host }),
        rejectUnauthorized: opts.rejectUnauthorized ?? true,
      });
      tls.once('error', fail);
      stream = tls;
    }
    const inner = httpRequest({
      createConnection: () => stream,
      method: 'GET',
      path: `${url.pathname}${url.search}`,
      signal,
      headers: { host: url.host, connection: 'close' },
    });
    inner.on('response', (message) => resolve({ message }));
    inner.on('error', fail);
    inner.end();
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
      if (signal.aborted) throw new ProbeFailure('BODY', errorCode(null, signal));
      size += chunk.length;
      if (size > limit) return Buffer.concat(chunks).toString('utf8'); // enough read: the rest is not needed
      chunks.push(chunk);
    }
    // A body framed by the connection's close ends, for the parser, when the deadline's abort closes the
    // socket: the loop ends as if the body were whole. Cut short, it is not.
    if (signal.aborted) throw new ProbeFailure('BODY', errorCode(null, signal));
    if (!message.complete) throw new ProbeFailure('BODY', 'econnreset'); // what a cut body surfaces as
  } catch (err) {
    if (err instanceof ProbeFailure) throw err;
    throw new ProbeFailure('BODY', errorCode(err, signal));
  } finally {
    message.socket?.destroy();
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The URL fetched by the prober itself, through no proxy: whether the echo endpoint answers at all (the
 * EGRESS tier counts a failure through a proxy only then: functions/probe/src/tiers.ts).
 */
export async function fetchDirect(opts: ProbeOptions): Promise<ProbeResult> {
  if (opts.cancel?.aborted) return CANCELLED;
  const started = performance.now();
  const deadline = deadlineSignal(opts.timeoutMs, opts.cancel);
  const finish = (r: Omit<ProbeResult, 'latencyMs'>): ProbeResult => ({
    ...r,
    latencyMs: Math.round(performance.now() - started),
  });
  let stage: ProbeStage = 'DIAL';
  try {
    const res = await fetch(opts.url, { signal: deadline, redirect: 'manual' });
    stage = 'BODY';
    const body = await readFetchBody(res, opts.maxBodyBytes ?? 64 * 1024);
    const ok = res.status === opts.expectedStatus;
    return finish({
      ok,
      status: res.status,
      body,
      failure: ok ? null : { stage: 'RESPONSE_HEADERS', code: `unexpected_status_${res.status}` },
    });
  } catch (err) {
    return finish({
      ok: false,
      status: null,
      body: null,
      failure: { stage, code: errorCode(err, deadline) },
    });
  }
}

/** At most `limit` bytes of a fetch's body, as text; the rest is not read (the stream is cancelled). */
async function readFetchBody(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
      if (size >= limit) break;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/** The BASIC tier without a probe URL: TCP connect to the proxy and a CONNECT handshake, nothing more. */
export async function handshakeThroughProxy(
  target: ProbeTarget,
  authority: string,
  timeoutMs: number,
  cancel?: AbortSignal,
  lookup?: DialLookup,
): Promise<ProbeResult> {
  if (cancel?.aborted) return CANCELLED;
  const started = performance.now();
  const auth = target.credentials ? `Basic ${Buffer.from(target.credentials).toString('base64')}` : undefined;
  const done = (failure: ProbeResult['failure'], status: number | null): ProbeResult => ({
    ok: failure === null,
    latencyMs: Math.round(performance.now() - started),
    status,
    body: null,
    failure,
  });
  const deadline = deadlineSignal(timeoutMs, cancel);
  if (target.protocol === 'socks5')
    return socks5Handshake(target, authority, timeoutMs, deadline, done, lookup);
  return new Promise<ProbeResult>((resolve) => {
    const req = httpRequest({
      host: target.host,
      port: target.port,
      method: 'CONNECT',
      path: authority,
      agent: false,
      signal: deadline,
      ...lookupOption(lookup),
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

/** BASIC without a probe URL through a SOCKS5 proxy: TCP connect, SOCKS5 CONNECT to `authority`, close. */
async function socks5Handshake(
  target: ProbeTarget,
  authority: string,
  timeoutMs: number,
  deadline: AbortSignal,
  done: (failure: ProbeResult['failure'], status: number | null) => ProbeResult,
  lookup: DialLookup | undefined,
): Promise<ProbeResult> {
  const colon = authority.lastIndexOf(':');
  const destination = {
    host: authority.slice(0, colon).replace(/^\[|\]$/g, ''),
    port: Number(authority.slice(colon + 1)),
  };
  try {
    const socket = await socks5Connect(target, destination, deadline, timeoutMs, lookup);
    socket.destroy();
    return done(null, null);
  } catch (err) {
    const f = err instanceof ProbeFailure ? err : new ProbeFailure('DIAL', errorCode(err, deadline));
    return done({ stage: f.stage, code: f.code }, null);
  }
}
