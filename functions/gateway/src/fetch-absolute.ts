// POST /v1/fetch of an http:// URL through an upstream that filters destinations itself: the request in
// absolute form with the host name over the upstream's kept-alive connections (upstream-pool.ts), as
// the proxy listener does (plain-forward.ts). A pinned CONNECT would be refused by our managed squid,
// which tunnels to port 443 only (docs/cloud-init.md). Resolves once the response head is in.
import http, { type IncomingMessage } from 'node:http';
import type { Upstream } from '../../../shared/src/domain/gateway/routing.js';
import type { UpstreamAuth } from './compile.js';
import type { OutcomeStage } from './outcomes.js';
import { isProxyChallenge, MAX_RESPONSE_HEAD_BYTES } from './response-head.js';
import { resendableOnFresh, type UpstreamPool, UpstreamPoolClosedError } from './upstream-pool.js';

export type AbsoluteFetchResult =
  /**
   * `done`: the caller finished with the response (read whole or not); frees or drops the connection.
   * `timedOut`: the deadline ended the exchange — a body cut then did not break off on the target's side.
   * `onDeadline`: what the deadline also cuts, until done() (fetch-through.ts FetchResult).
   */
  | {
      ok: true;
      response: IncomingMessage;
      done: () => void;
      timedOut: () => boolean;
      onDeadline: (cut: () => void) => void;
    }
  | { ok: false; stage: OutcomeStage; status: number; code: string; upstreamStatus?: number };

export interface AbsoluteFetch {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  timeoutMs: number;
  /** At timeoutMs: the time more it may run (a renewed ownership grant, fetch-through.ts), or 0. */
  renewed?: () => number;
  /**
   * How long an attempt may wait for its connection to the upstream (GATEWAY_UPSTREAM_TIMEOUT_MS): past
   * it, a DIAL failure, `upstream_timeout`. Without it a proxy that drops SYNs (a stopped VM) held every
   * fetch for the whole fetch deadline, answered as the target's `fetch_timeout`.
   */
  dialTimeoutMs?: number;
  /** Called once the request has a connection to the upstream (pooled or new). */
  onConnected: () => void;
  /** Given what abandons the exchange before its head (the caller left): settles it `client_closed`. */
  abortable?: (abort: () => void) => void;
}

/** A fetch refused by the drain's cut (the gateway's own shutdown): counted against no proxy. */
export const SHUTTING_DOWN = 'shutting_down';

export function fetchAbsolute(
  u: Upstream<UpstreamAuth>,
  pool: UpstreamPool,
  f: AbsoluteFetch,
): Promise<AbsoluteFetchResult> {
  const headers = u.auth.authorization
    ? { ...f.headers, 'proxy-authorization': u.auth.authorization }
    : f.headers;
  return new Promise((resolve, reject) => {
    /** The caller was told the request has a connection (once, even across a retry). */
    let connected = false;
    let settled = false;
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    let cut: (() => void) | undefined;
    const settle = (r: AbsoluteFetchResult) => {
      if (settled) return;
      settled = true;
      // The deadline covers the body too (as with a tunnel): it is cleared by done(), not by the head.
      if (!r.ok) clearTimeout(timer);
      resolve(r);
    };
    const send = (agent: http.Agent, retried: boolean): http.ClientRequest => {
      // This attempt's own connection, as in plain-forward.ts: a retry's fresh dial refused after the pooled
      // connection had connected sent the request nowhere — a DIAL failure (fetch-through.ts redials it),
      // not the target's.
      let reqConnected = false;
      let dialTimer: NodeJS.Timeout | undefined;
      const r = http.request({
        host: u.host,
        port: u.port,
        method: f.method,
        path: f.url,
        headers,
        setHost: false,
        agent,
        maxHeaderSize: MAX_RESPONSE_HEAD_BYTES,
      });
      // Armed once the request exists: one Node refuses throws above, and nothing is left running.
      if (f.dialTimeoutMs !== undefined)
        dialTimer = setTimeout(() => {
          if (reqConnected || r !== req) return;
          // Settled first: the destroy's 'close' must not read as the target's bad response.
          settle({ ok: false, stage: 'DIAL', status: 504, code: 'upstream_timeout' });
          r.destroy();
        }, f.dialTimeoutMs);
      r.on('socket', (s) => {
        const up = () => {
          reqConnected = true;
          clearTimeout(dialTimer);
          if (connected) return;
          connected = true;
          f.onConnected();
        };
        if (s.connecting) s.once('connect', up);
        else up();
      });
      r.on('response', (res) => {
        if ((res.statusCode ?? 0) < 200) {
          // A 101 without `Connection: upgrade`, which Node reads as a whole answer and would pool the
          // connection after (plain-forward.ts onResponse): destroyed here, whatever the relay does.
          r.destroy();
          settle({ ok: false, stage: 'RESPONSE_HEADERS', status: 502, code: 'target_bad_response' });
          return;
        }
        // Only a 407 with a challenge is the upstream's (response-head.ts isProxyChallenge); a target's
        // 407 is the target's response.
        if (isProxyChallenge(res)) {
          r.destroy();
          settle({
            ok: false,
            stage: 'PROXY_HANDSHAKE',
            status: 502,
            code: 'upstream_auth_failed',
            upstreamStatus: 407,
          });
          return;
        }
        settle({
          ok: true,
          response: res,
          done: () => {
            clearTimeout(timer);
            // Reusable only once both messages are whole. A response can end before our body left: an
            // upstream answering from the head alone and no longer reading keeps the rest in our buffers
            // for good, the socket neither pooled nor closed (nothing else would ever destroy it).
            if (!res.complete || !r.writableFinished) r.destroy();
          },
          timedOut: () => timedOut,
          onDeadline: (c) => {
            cut = c;
          },
        });
      });
      r.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return;
        if (err instanceof UpstreamPoolClosedError) {
          // The drain's cut closed the pool (a fetch that reached it after the cut, its look-up late):
          // nothing the proxy did, and no other proxy to try.
          settle({ ok: false, stage: 'DIAL', status: 503, code: SHUTTING_DOWN });
          return;
        }
        if (r.reusedSocket && !retried && !f.body && resendableOnFresh(f.method, err.code)) {
          // A pooled connection the upstream had closed, and nothing came back: once more on a new one.
          pool.dropIdle(u.host, u.port);
          req = send(pool.fresh, true);
          return;
        }
        if (!reqConnected) settle({ ok: false, stage: 'DIAL', status: 502, code: 'upstream_dial_failed' });
        else
          settle({
            ok: false,
            stage: 'RESPONSE_HEADERS',
            status: 502,
            code: 'target_failed',
          });
      });
      // A 101 (or any upgrade) has no 'upgrade' listener: Node destroys the socket and emits only
      // 'close'. Without this the exchange never settled and held its slot. A retried request's 'close'
      // comes after its replacement was sent: not this exchange's end.
      r.on('close', () => {
        clearTimeout(dialTimer);
        if (r === req && !settled)
          settle({ ok: false, stage: 'RESPONSE_HEADERS', status: 502, code: 'target_bad_response' });
      });
      r.end(f.body);
      return r;
    };
    let req: http.ClientRequest;
    try {
      req = send(pool.agentFor(u.host, u.port, u.auth.authorization), false);
    } catch (err) {
      // Node refused a field value or the target before sending anything (ERR_INVALID_CHAR, …).
      reject(err);
      return;
    }
    const atDeadline = () => {
      const more = f.renewed?.() ?? 0;
      if (more > 0) {
        timer = setTimeout(atDeadline, more);
        return;
      }
      timedOut = true;
      req.destroy();
      settle({ ok: false, stage: 'RESPONSE_HEADERS', status: 504, code: 'fetch_timeout' });
      cut?.();
    };
    timer = setTimeout(atDeadline, f.timeoutMs);
    f.abortable?.(() => {
      // Settled first: the destroy's 'close' must not read as the target's bad response.
      settle({ ok: false, stage: 'RESPONSE_HEADERS', status: 499, code: 'client_closed' });
      req.destroy();
    });
  });
}
