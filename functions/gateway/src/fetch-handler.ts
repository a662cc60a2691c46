// POST /v1/fetch on Node's own IncomingMessage/ServerResponse. It was a Hono route; on Cloud Run this
// endpoint is the gateway's whole data path, and the adaptor's per-request web objects (undici Request,
// AbortController, web streams on both sides, Headers) cost about as much CPU as the fetch itself
// (docs/gateway.md § The fetch endpoint). The wire behaviour is the Hono route's, kept on purpose: body
// limit checked before authentication, the same JSON errors, the same header rewriting but the target's
// Content-Length (relay: the answer goes chunked).
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import {
  DUPLICATE_KEY_MESSAGE,
  findDuplicateKey,
  type JsonPathSegment,
} from '../../../shared/src/domain/duplicate-keys.js';
import type { ClientAuth } from './client-auth.js';
import { DROPPED_RESPONSE_HEADERS, FetchRequest, SINGLE_VALUE_FIELDS } from './fetch-request.js';
import { type FetchCaller, type FetchDeps, fetchThrough } from './fetch-through.js';
import type { Logger } from './logger.js';
import { drainUnread, readBody, sendJson } from './node-io.js';
import { codedBeyondChunked, connectionListed, isGatewayField } from './response-head.js';
import { detailHeaders } from './responses.js';
import { streamBody } from './stream-body.js';

export interface FetchHandlerDeps extends FetchDeps {
  auth: ClientAuth;
  maxBodyBytes: number;
  maxResponseBytes: number;
  log: Logger;
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);
// Request.json()'s decoding: UTF-8, a leading BOM dropped, bad sequences replaced (never thrown).
const utf8 = new TextDecoder();
const NOT_JSON = [{ path: '', message: 'the body is not JSON' }];
// JSON.parse keeps the last of a repeated key: {"url":"https://a/","url":"https://b/"} fetched b. Refused as
// the API refuses one (issue code duplicate_key), before anything is fetched.
const repeatedKey = (path: JsonPathSegment[]) => [
  {
    path: path.join('.'),
    code: 'duplicate_key',
    message: DUPLICATE_KEY_MESSAGE,
  },
];

/** A header as the web Headers the Hono route read gave it: every occurrence, joined by ", ". */
function header(req: IncomingMessage, name: string): string | undefined {
  let v: string | undefined;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name)
      v = v === undefined ? raw[i + 1]! : `${v}, ${raw[i + 1]!}`;
  return v;
}

function authenticate(auth: ClientAuth, proxyAuth?: string, authorization?: string): string | null {
  const viaProxy = auth.basic(proxyAuth);
  if (viaProxy !== null) return viaProxy;
  if (authorization?.toLowerCase().startsWith('bearer ')) return auth.bearer(authorization);
  return auth.basic(authorization);
}

export function createFetchHandler(deps: FetchHandlerDeps) {
  const refuse = (
    res: ServerResponse,
    status: number,
    code: string,
    body: object,
    extra = {},
    route = '-',
  ) => {
    deps.recorder.request('fetch', route, code);
    sendJson(res, status, body, { ...detailHeaders(body), ...extra, 'x-proxyplane-error': code });
  };
  const tooLarge = (res: ServerResponse, extra = {}) =>
    refuse(res, 413, 'body_too_large', { error: 'body_too_large' }, extra);
  const unauthorized = (res: ServerResponse, extra = {}) =>
    refuse(
      res,
      401,
      'unauthorized',
      { error: 'unauthorized' },
      { 'www-authenticate': 'Bearer, Basic realm="proxyplane"', ...extra },
    );

  /**
   * What the head alone decides: the caller, or null once refused. hono/body-limit's order: a declared
   * length is judged before anything else. Then the caller is authenticated, from the head alone, before a
   * byte of any body is read: the Hono route read an undeclared (chunked) body up to the limit first, so
   * anyone could make the gateway hold GATEWAY_FETCH_MAX_BODY_BYTES per connection for as long as the body
   * stayed unfinished. `uninvited`: the head asked `Expect: 100-continue` and its body was not invited — a
   * refusal then closes the connection with the answer instead of draining a body the client may or may
   * not send (either way, nothing after the head could be read as the next request).
   */
  function admit(req: IncomingMessage, res: ServerResponse, uninvited: boolean): string | null {
    const declared =
      req.headers['content-length'] !== undefined && req.headers['transfer-encoding'] === undefined;
    const close = uninvited ? { connection: 'close' } : {};
    if (declared && Number.parseInt(req.headers['content-length'] ?? '0', 10) > deps.maxBodyBytes) {
      tooLarge(res, close);
      if (!uninvited) drainUnread(req, res);
      return null;
    }
    const who = authenticate(deps.auth, header(req, 'proxy-authorization'), header(req, 'authorization'));
    if (who === null) {
      unauthorized(res, close);
      if (!uninvited) drainUnread(req, res);
    }
    return who;
  }

  /** The caller of a request whose head checkContinue admitted: serve does not judge it again. */
  const invited = new WeakMap<IncomingMessage, string>();

  /**
   * A request with `Expect: 100-continue`, before its body is invited: true when the head passes (the
   * caller sends 100 Continue and serves it as any request); otherwise its 413 or 401 has gone out and the
   * connection closes with it.
   */
  const checkContinue = (req: IncomingMessage, res: ServerResponse): boolean => {
    const who = admit(req, res, true);
    if (who !== null) invited.set(req, who);
    return who !== null;
  };

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const who = invited.get(req) ?? admit(req, res, false);
      if (who === null) return;
      const body = await readBody(req, deps.maxBodyBytes);
      if (body === 'too_large') {
        tooLarge(res);
        return drainUnread(req, res);
      }
      if (body === 'failed') {
        // The client went away mid-body (its socket closed or failed before the body ended): counted as
        // any request whose client left first, and answered to nobody. Not logged: one ERROR line per
        // request a client chose to abandon would be a log flood anyone with a client user could cause,
        // and says nothing about the gateway.
        deps.recorder.request('fetch', '-', 'client_closed');
        return;
      }
      await forward(res, body, who);
    } catch (err) {
      deps.log.error('http handler failed', { error: (err as Error).message, path: '/v1/fetch' });
      if (!res.headersSent) sendJson(res, 500, { error: 'internal' });
      else res.destroy();
    }
  };

  return { serve, checkContinue };

  async function forward(out: ServerResponse, raw: Buffer, user: string) {
    const text = utf8.decode(raw);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return refuse(out, 400, 'bad_request', { error: 'bad_request', issues: NOT_JSON });
    }
    const duplicate = findDuplicateKey(text);
    if (duplicate !== null)
      return refuse(out, 400, 'bad_request', { error: 'bad_request', issues: repeatedKey(duplicate.path) });
    const parsed = FetchRequest.safeParse(json);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
      return refuse(out, 400, 'bad_request', { error: 'bad_request', issues });
    }
    // A caller that leaves while the fetch is under way calls it off: its slot and upstream socket were
    // held until the target answered or the deadline passed, for nobody (a crawler whose own timeout is
    // shorter than GATEWAY_FETCH_TIMEOUT_MS leaves that way all the time).
    const caller: FetchCaller = { gone: false, abort: undefined };
    const onGone = () => {
      caller.gone = true;
      caller.abort?.();
    };
    // And its connection: a response queued behind another on it (pipelined) gets no 'close' of its own
    // when the client goes (Node destroys only the request).
    const conn = out.req.socket;
    out.once('close', onGone);
    conn?.once('close', onGone);
    let r: Awaited<ReturnType<typeof fetchThrough>>;
    try {
      r = await fetchThrough(parsed.data, user, deps, caller);
    } finally {
      out.off('close', onGone);
      conn?.off('close', onGone);
    }
    if (!r.ok && r.code === 'client_closed') return deps.recorder.request('fetch', r.route ?? '-', r.code);
    if (!r.ok) return refuse(out, r.status, r.code, { error: r.code, ...r.detail }, {}, r.route);
    const res = r.response;
    let released = false;
    const done = (broken = false) => {
      if (released) return;
      released = true;
      r.done(broken);
    };
    try {
      relay(out, res, r.route, parsed.data.method, done, r.onDeadline);
    } catch (err) {
      // writeHead refusing a header value, say: the slot goes back before the 500 goes out.
      res.destroy();
      done();
      throw err;
    }
  }

  function relay(
    out: ServerResponse,
    res: IncomingMessage,
    route: string,
    method: string,
    done: (broken?: boolean) => void,
    onDeadline: (cut: () => void) => void,
  ) {
    const status = res.statusCode ?? 0;
    // Node's parser takes any three digits from 100; an interim one (1xx) is never the answer here. A
    // status past 599 is one (LinkedIn's 999 refuses a crawler): relayed as the proxy listener relays it —
    // a 502 told the caller the chain failed, and it tried other proxies against a deliberate refusal.
    // Not a body coded beyond chunked: Transfer-Encoding is dropped
    // here (the body goes chunked anew), and the gzip under it would go with no label (codedBeyondChunked);
    // an answer with no body (HEAD, 204, 304: Node reads a 205's body) has nothing to mislabel.
    const coded =
      codedBeyondChunked(res.headers['transfer-encoding']) &&
      status !== 204 &&
      status !== 304 &&
      method.toUpperCase() !== 'HEAD';
    if (status < 200 || status > 999 || coded) {
      res.destroy();
      done();
      deps.recorder.request('fetch', route, 'target_bad_response');
      return sendJson(
        out,
        502,
        { error: 'target_bad_response', status },
        { 'x-proxyplane-error': 'target_bad_response' },
      );
    }
    // The client left while the target was answering: nobody to stream to (a response still queued behind
    // another is not destroyed with its connection: the connection tells).
    if (out.destroyed || out.req.socket?.destroyed) {
      deps.recorder.request('fetch', route, 'client_closed');
      res.destroy();
      return done();
    }
    deps.recorder.request('fetch', route, 'ok');
    // No prototype: a target's `Constructor` or `__proto__` field is a field like any other (on a plain
    // object the first read Object's constructor as a value already there, the second set nothing).
    const headers: OutgoingHttpHeaders = Object.create(null);
    // Hop-by-hop: the fixed list, and whatever the target's Connection header names (RFC 9110 §7.6.1).
    // And X-Proxyplane-*, the gateway's own (isGatewayField).
    const listed = connectionListed(res.rawHeaders);
    for (let i = 0; i < res.rawHeaders.length; i += 2) {
      const name = res.rawHeaders[i]!.toLowerCase();
      if (DROPPED_RESPONSE_HEADERS.has(name) || listed?.has(name) || isGatewayField(name)) continue;
      const value = res.rawHeaders[i + 1]!;
      const had = headers[name];
      if (name === 'set-cookie') {
        if (had) (had as string[]).push(value);
        else headers[name] = [value];
      } else if (had === undefined) headers[name] = value;
      // A field that holds one value, repeated by the target: the first, as Node's own parser keeps it.
      // Joined, two Content-Types read as a charset `utf-8, text/html`, two Dates as no date at all.
      else if (!SINGLE_VALUE_FIELDS.has(name)) headers[name] = `${had}, ${value}`;
    }
    headers['x-proxyplane-route'] = route;
    // The target's Content-Length is dropped (DROPPED_RESPONSE_HEADERS), so Node sends the body chunked:
    // Cloud Run's front end refuses an HTTP/1 answer over 32 MiB that is neither chunked nor streamed — an
    // empty 500 to the client for a body counted ok here (GATEWAY_FETCH_MAX_RESPONSE_BYTES is 64 MiB).
    // A body cut short is told by the connection's abort, not by a length; the length the target declared
    // (of the representation, for HEAD or 304) is told under the gateway's own name.
    const length = res.headers['content-length'];
    if (length !== undefined) headers['x-proxyplane-content-length'] = length;
    // What @hono/node-server put on a response without a type; kept so clients see no change.
    headers['content-type'] ??= 'text/plain; charset=UTF-8';
    const bodyless = NULL_BODY.has(status) || method.toUpperCase() === 'HEAD';
    // An HTTP/1.0 client takes no chunks: its body ends at the close. It keeps the target's length (Cloud
    // Run's front end speaks HTTP/1.1 to us); without one, a cut resets the connection (streamBody), so
    // that a cut-off body does not look complete.
    const http10 = !bodyless && out.req.httpVersionMinor === 0;
    if (http10 && length !== undefined) headers['content-length'] = length;
    out.writeHead(status, headers);
    // A head alone goes the same way (Node sends no body for HEAD, 204 or 304): it too may wait behind an
    // earlier answer on its connection, and its slot goes back once it has been written, not when the
    // target ended. The deadline bounds the client's side too: a tail still queued for a reader that
    // stopped reading holds the slot (stream-body.ts), and would for as long as that reader kept its
    // connection open.
    onDeadline(streamBody(res, out, deps.maxResponseBytes, done, http10 && length === undefined));
  }
}
