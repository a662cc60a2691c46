// POST /v1/fetch's engine: the same guard, route and pick as the proxy listener, then a CONNECT tunnel
// to the pinned target address through the chosen upstream (an HTTP CONNECT, or a SOCKS5 one for a
// SOCKS5 upstream: socks5-handshake.ts), TLS inside it for https, and one HTTP/1.1
// request — or, for http:// through an upstream that filters destinations itself, the request in
// absolute form over its kept-alive connections (fetch-absolute.ts). Resolves once the target's response head is in; the caller streams the body and calls done().
import http, { type IncomingMessage } from 'node:http';
import tls from 'node:tls';
import { isNoDnsName, parseIp } from '../../../shared/src/domain/gateway/ip.js';
import { headerStickyKey, isUsable } from '../../../shared/src/domain/gateway/pick.js';
import {
  type CompiledRoute,
  matchRoute,
  normalizeHost,
  type Upstream,
} from '../../../shared/src/domain/gateway/routing.js';
import type { TargetDecision } from '../../../shared/src/domain/gateway/ssrf.js';
import { refusalCode } from '../../../shared/src/domain/gateway/staleness.js';
import type { StickyKey } from '../../../shared/src/messages/gateway-snapshot.js';
import type { UpstreamAuth } from './compile.js';
import { type AbsoluteFetchResult, fetchAbsolute, SHUTTING_DOWN } from './fetch-absolute.js';
import { DROPPED_REQUEST_HEADERS, type FetchRequest } from './fetch-request.js';
import { absoluteUrl, formatAuthority } from './head.js';
import type { GatewayRecorder } from './metrics.js';
import type { OutcomeStage } from './outcomes.js';
import { connectionListed, isProxyErrorPage, MAX_RESPONSE_HEAD_BYTES } from './response-head.js';
import type { SocketCounts } from './sockets.js';
import { openSocks5Tunnel } from './socks5-handshake.js';
import type { TargetGuard } from './target-guard.js';
import type { UpstreamPool } from './upstream-pool.js';
import { evidenceStage, openTunnel, TunnelError, tunnelRefusal } from './upstream-tunnel.js';
import type { GatewayWorker } from './worker.js';

export interface FetchDeps {
  worker: GatewayWorker;
  guard: TargetGuard;
  recorder: GatewayRecorder;
  sockets: SocketCounts;
  upstreamTimeoutMs: number;
  maxTimeoutMs: number;
  /** Kept-alive upstream connections, shared with the proxy listener. */
  pool: UpstreamPool;
}

export type FetchFailure = {
  ok: false;
  status: number;
  code: string;
  detail?: Record<string, string | number>;
  /** The route picked, once one was: the request is counted under it, as the proxy listener's are. */
  route?: string;
};
export type FetchResult =
  | {
      ok: true;
      response: IncomingMessage;
      route: string;
      /** Once the body is over: `broken` when the target's side broke it off (stream-body.ts). */
      done: (broken: boolean) => void;
      /**
       * What the fetch's deadline also cuts, until done(): the client's side. A body the target has ended
       * holds its slot until its tail has left for the client (stream-body.ts); without this, a reader
       * that stopped reading short of the end held it for as long as it kept the connection open.
       */
      onDeadline: (cut: () => void) => void;
    }
  | FetchFailure;

/**
 * The caller's side of one fetch, for the handler to call it off: `gone` once the caller left, and
 * `abort`, set by fetchThrough for the stage in flight (the tunnel's dial and handshake, the wait for the
 * target's head), which ends that stage at once. A caller that left resolves as `client_closed`, its
 * slot and upstream socket given back then, not at the deadline — and not counted against the upstream.
 */
export interface FetchCaller {
  gone: boolean;
  abort: (() => void) | undefined;
}

const CLIENT_CLOSED = 'client_closed';
const FETCH_TIMEOUT = 'fetch_timeout';
const GONE = new Error('the caller left');

/** The guard's look-up, or what ends the fetch first: its deadline (`ms` from now) or the caller leaving. */
function lookupWithin(
  lookup: Promise<TargetDecision>,
  ms: number,
  caller: FetchCaller,
): Promise<TargetDecision | typeof CLIENT_CLOSED | typeof FETCH_TIMEOUT> {
  if (caller.gone) return Promise.resolve(CLIENT_CLOSED);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(FETCH_TIMEOUT), ms);
    caller.abort = () => {
      clearTimeout(timer);
      resolve(CLIENT_CLOSED);
    };
    lookup.then(
      (d) => {
        clearTimeout(timer);
        resolve(d);
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

const fail = (status: number, code: string, detail?: Record<string, string | number>): FetchFailure => ({
  ok: false,
  status,
  code,
  detail,
});

/**
 * The second attempt of a fetch whose first dial failed before the upstream took a byte (refused,
 * unreachable, closed before it connected): another proxy of the route, already picked, under the same
 * deadline. Once per fetch, as on the proxy listener (proxy-session.ts redial).
 */
interface Redial {
  readonly route: CompiledRoute<UpstreamAuth>;
  readonly upstream: Upstream<UpstreamAuth>;
  /** The proxy whose dial failed: never picked again for this fetch. */
  readonly failed: Upstream<UpstreamAuth>;
  /** The first attempt's own deadline, a `performance.now()` instant. */
  readonly deadline: number;
  /** The fetch went to a SUSPECT upstream as the fallback already, and was counted (worker.ts pick). */
  readonly fellBack: boolean;
}

export async function fetchThrough(
  req: FetchRequest,
  user: string,
  deps: FetchDeps,
  caller: FetchCaller = { gone: false, abort: undefined },
  redial?: Redial,
): Promise<FetchResult> {
  // One deadline for the whole fetch — the guard's look-up, the upstream's dial and handshake, the
  // target's head and body — not a timer started once the tunnel was up: that let an upstream slow to
  // answer CONNECT (or dripping its answer) hold the caller past its timeoutMs, up to
  // GATEWAY_UPSTREAM_TIMEOUT_MS or for good. On the monotonic clock, as the proxy listener's deadlines: a
  // wall clock stepped meanwhile (NTP) cut a fetch short by the step, or let it run on that much longer.
  const ownDeadline =
    redial?.deadline ?? performance.now() + Math.min(req.timeoutMs ?? deps.maxTimeoutMs, deps.maxTimeoutMs);
  let deadline = ownDeadline;
  const left = () => Math.max(1, deadline - performance.now());
  /** The deadline is the caller's (a timeoutMs under the gateway's own bound), not the gateway's. */
  const callerBound = req.timeoutMs !== undefined && req.timeoutMs < deps.maxTimeoutMs;
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    return fail(400, 'bad_url');
  }
  // WHATWG URL takes port 0 (any spelling of it: "0" here): no target listens there, so it is a malformed
  // URL, refused before the guard resolves the name (it answered 403 ssrf_refused, reason bad_port).
  if (url.port === '0') return fail(400, 'bad_url');
  if (url.username || url.password) return fail(400, 'credentials_in_url');
  const https = url.protocol === 'https:';
  const host = normalizeHost(url.hostname);
  // WHATWG URL makes numeric IPv4 forms dotted decimal but keeps an empty label a name (`a..b`,
  // `127.0.0.1..`, which normalizeHost leaves `127.0.0.1.`): no DNS name, a malformed URL as the proxy
  // listener's 400 says — it answered 502 target_unresolvable, which clients retry, from the guard.
  if (isNoDnsName(host)) return fail(400, 'bad_url');
  const port = url.port ? Number(url.port) : https ? 443 : 80;
  // Not for a redial: again() let it through as an admitted request, which a drain still serves.
  if (!redial && !deps.worker.accepting)
    return fail(503, refusalCode(deps.worker.phase()) ?? 'not_accepting');

  let d: TargetDecision;
  const checked = deps.guard.check(host, port);
  if (checked instanceof Promise) {
    // A look-up (an uncached name): it races the fetch's deadline and the caller leaving, as every later
    // stage does — a silent nameserver held the caller for GATEWAY_DNS_TIMEOUT_MS's attempts whatever its
    // timeoutMs, and a caller that left was still waited for. The look-up itself runs on for the guard's
    // cache (other requests may share it); no upstream is picked yet, so nothing counts against one.
    deps.worker.checking++;
    let raced: TargetDecision | typeof CLIENT_CLOSED | typeof FETCH_TIMEOUT;
    try {
      raced = await lookupWithin(checked, left(), caller);
    } finally {
      caller.abort = undefined;
      deps.worker.checking--;
    }
    if (raced === CLIENT_CLOSED) return fail(499, CLIENT_CLOSED);
    if (raced === FETCH_TIMEOUT) return fail(504, FETCH_TIMEOUT);
    d = raced;
  } else d = checked;
  // The look-up may have outlasted the snapshot's freshness: no pick from a stale one (a shutdown that
  // began meanwhile drains this request like any other admitted before it, on a snapshot still fresh).
  const refusal = deps.worker.refusalAfterLookup();
  if (refusal) return fail(503, refusal);
  if (!d.allow) {
    if (d.reason === 'unresolvable') return fail(502, 'target_unresolvable');
    deps.recorder.ssrfRefused('fetch', d.reason);
    return fail(403, 'ssrf_refused', { reason: d.reason });
  }
  if (caller.gone) return fail(499, CLIENT_CLOSED);
  if (performance.now() >= deadline) return fail(504, FETCH_TIMEOUT);
  const lower = new Map(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const sticky = {
    stickyValue: (key: StickyKey) =>
      'header' in key ? headerStickyKey(user, lower.get(key.header)) : user || undefined,
    stickyOwner: () => user,
  };
  // A redial's proxy was picked before the guard ran again, and a look-up may have outlasted its use:
  // past usableUntil, revoked or filled meanwhile, another is picked (never the one that failed, which
  // `pick` avoids by name). The one kept is taken as the current snapshot has it: a swap compiles new
  // entries (sharing each proxy's counters by name), so the old object, for a proxy the swap dropped,
  // would carry counters no runtime report includes — a slot reserved on those is in use unseen, and the
  // controller may give the proxy to another worker. It is kept only while the current snapshot's route
  // for the host still has it: a swap may have excluded it from the route (its target check fails
  // through it), changed the route's selector or removed the route.
  const now = Date.now();
  const snap = deps.worker.snapshot();
  const routeNow = redial && snap ? matchRoute(snap.table, host) : undefined;
  const kept = redial && routeNow?.byName.get(redial.upstream.name);
  const picked =
    redial && routeNow && kept && kept.name !== redial.failed.name && isUsable(kept, now)
      ? ({ kind: 'ok', route: routeNow, upstream: kept, fellBack: redial.fellBack } as const)
      : deps.worker.pick(host, now, sticky, redial?.failed, redial?.fellBack);
  if (picked.kind === 'no_upstream') return { ...fail(503, picked.kind), route: picked.route.name };
  if (picked.kind !== 'ok') return fail(503, picked.kind);
  const { upstream: u, route, fellBack } = picked;
  /**
   * After a dial that failed before the upstream took a byte: the fetch again through another proxy of
   * the route, when there is one (the failed dial reported first, as without the retry); else null. Only
   * as an admitted request may pick after its look-up (the proxy listener's rule too): a drain serves what
   * it admitted, but never from a snapshot past its stale age or its grant.
   */
  const again = (): Promise<FetchResult> | null => {
    if (redial || caller.gone || deps.worker.refusalAfterLookup() !== null) return null;
    // Avoided by name (pick.ts): a swap during the dial compiled a new entry for the proxy, which must stay
    // out too (for certain on a sticky route), or the one redial is spent on the dead proxy again.
    // A fallback this fetch's first pick made is counted already: once per request, not per pick.
    const other = deps.worker.pick(host, Date.now(), sticky, u, fellBack);
    if (other.kind !== 'ok') return null;
    deps.recorder.redialed('fetch');
    outcome('DIAL', false);
    return fetchThrough(req, user, deps, caller, { ...other, failed: u, deadline: ownDeadline });
  };
  // The proxy's hard expiry (contract seed §3: expiresAt, the end of this worker's ownership grant): the
  // fetch ends there at the latest, head and body, as a tunnel on the proxy listener is cut then
  // (proxy-session.ts sweep) — past it the controller may have given the proxy to another worker. A
  // renewed grant moves it (renewed() below), so only a worker whose grant is not being renewed (cut off
  // from the controller) ever reaches it. Like a caller's own shorter timeoutMs, it is no evidence
  // against the proxy. The worker's own grant end too, which is sooner on a host clock behind the
  // controller's (worker.ts grantEndsAtMs): the proxy's expiresAt is a wall-clock instant of the controller's.
  // Both are wall-clock instants: each is read as the time left until it, counted on from now monotonically.
  const grantEnd = (expiresAtMs: number) =>
    performance.now() + (Math.min(expiresAtMs, deps.worker.grantEndsAtMs()) - Date.now());
  const pickedEnd = grantEnd(u.expiresAtMs);
  let grantBound = pickedEnd < deadline;
  if (grantBound) deadline = pickedEnd;
  const notTheProxys = () => callerBound || grantBound;
  /**
   * At a deadline that was the grant's: the time a renewed grant gives on (the proxy's expiresAt in the
   * snapshot taken since), else 0 — the fetch ends. The grant it was picked under is no bound once a later
   * snapshot has extended it: a worker in touch with the controller is renewed every tick, and a fetch may
   * run for GATEWAY_FETCH_TIMEOUT_MS, which may be longer than a grant has left (~90-180 s).
   */
  const renewed = (): number => {
    if (!grantBound) return 0;
    const listed = deps.worker.snapshot()?.upstreams.get(u.name);
    if (!listed || listed.host !== u.host || listed.port !== u.port) return 0;
    const listedEnd = grantEnd(listed.expiresAtMs);
    const end = Math.min(ownDeadline, listedEnd);
    if (end <= performance.now()) return 0;
    deadline = end;
    grantBound = listedEnd < ownDeadline;
    return left();
  };
  const failOn = (status: number, code: string, detail?: Record<string, string | number>) => ({
    ...fail(status, code, detail),
    route: route.name,
  });

  u.live.reserved++;
  let load: 0 | 1 | 2 = 1;
  const release = () => {
    if (load === 1) u.live.reserved--;
    else if (load === 2) u.live.active--;
    load = 0;
  };
  const t0 = performance.now();
  const target = `${host}:${port}`;
  const outcome = (stage: OutcomeStage, ok: boolean, status?: number) =>
    deps.worker.recordOutcome({
      proxy: u.name,
      route: route.name,
      stage,
      ok,
      latencyMs: Math.round(performance.now() - t0),
      target,
      status,
      at: Date.now(),
    });
  /**
   * The body is over. One the target's side broke off after the head is a TUNNEL failure (contract seed
   * §5: failed after the tunnel was established), reported besides the head's success — a truncated answer
   * counted as nothing but a success. One the deadline cut is not: the caller's bound or the grant's, as
   * for the head, and a long body is no evidence against the proxy.
   */
  const bodyOver = (broken: boolean, timedOut: boolean) => {
    if (broken && !timedOut) outcome('TUNNEL', false);
  };

  // Hop-by-hop fields go, as on the proxy listener (head.ts): the fixed list, and whatever a Connection
  // header among the caller's names (host and content-length are the gateway's own below).
  const listed = connectionListed(Object.entries(req.headers).flat());
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    const n = k.toLowerCase();
    if (!DROPPED_REQUEST_HEADERS.has(n) && !listed?.has(n)) headers[k] = v;
  }
  headers.host = url.host;
  const body = req.body === undefined ? undefined : Buffer.from(req.body, req.bodyEncoding);
  if (body) headers['content-length'] = String(body.length);

  if (!https && u.auth.absoluteUri) {
    // An upstream that filters destinations itself: absolute form over its kept-alive connections.
    let r: AbsoluteFetchResult;
    try {
      r = await fetchAbsolute(u, deps.pool, {
        url: absoluteUrl({ host, port }, `${url.pathname}${url.search}`),
        method: req.method,
        headers,
        body,
        timeoutMs: left(),
        renewed,
        // The upstream's own bound on its dial, as for a tunnel below; the fetch's deadline, if sooner,
        // ends it first (fetch_timeout, no evidence against the proxy when the caller set it short).
        dialTimeoutMs: deps.upstreamTimeoutMs,
        onConnected: () => {
          u.live.reserved--;
          u.live.active++;
          load = 2;
        },
        abortable: (abort) => {
          caller.abort = abort;
        },
      });
    } catch {
      release();
      return failOn(400, 'bad_request');
    } finally {
      caller.abort = undefined;
    }
    if (!r.ok) {
      release();
      if (r.code === CLIENT_CLOSED || r.code === SHUTTING_DOWN) return failOn(r.status, r.code);
      const retried = r.stage === 'DIAL' && r.code === 'upstream_dial_failed' ? again() : null;
      if (retried) return retried;
      // As on a tunnel below: the caller's own shorter deadline is no evidence against the proxy.
      if (!(r.code === FETCH_TIMEOUT && notTheProxys())) outcome(r.stage, false, r.upstreamStatus);
      return failOn(r.status, r.code, r.upstreamStatus ? { upstreamStatus: r.upstreamStatus } : undefined);
    }
    // As on the proxy listener (proxy-session.ts forwardResponse): relayed, but no success.
    outcome('RESPONSE_HEADERS', !isProxyErrorPage(r.response), r.response.statusCode);
    const { done, timedOut } = r;
    return {
      ok: true,
      response: r.response,
      route: route.name,
      done: (broken) => {
        done();
        release();
        bodyOver(broken, timedOut());
      },
      onDeadline: r.onDeadline,
    };
  }

  let sock: import('node:net').Socket;
  // The upstream's own bound, or what is left of the fetch's if that ends first.
  const handshakeMs = Math.min(deps.upstreamTimeoutMs, left());
  const fetchBound = handshakeMs < deps.upstreamTimeoutMs;
  const dialled = (s: import('node:net').Socket) => {
    caller.abort = () => s.destroy(GONE);
  };
  try {
    sock = await (u.auth.socks5
      ? openSocks5Tunnel(u, d.address, port, handshakeMs, deps.sockets, dialled)
      : openTunnel(u, formatAuthority(d.address, port), handshakeMs, deps.sockets, dialled));
  } catch (e) {
    caller.abort = undefined;
    release();
    if (caller.gone) return failOn(499, CLIENT_CLOSED);
    if (!(e instanceof TunnelError)) throw e;
    const retried = e.stage === 'DIAL' && e.kind === 'dial_failed' ? again() : null;
    if (retried) return retried;
    // Cut short by the caller's deadline, not the upstream's own bound: no evidence against the proxy. A
    // DIAL or PROXY_HANDSHAKE failure is always the proxy's fault to the passive health track, and any
    // client user could otherwise fail every proxy of a route with timeoutMs: 100.
    if (e.kind === 'timeout' && fetchBound) return failOn(504, FETCH_TIMEOUT);
    outcome(evidenceStage(e.kind, e.stage, e.answerAwaited), false, e.upstreamStatus);
    const r = tunnelRefusal(e);
    return failOn(r.status, r.code, r.detail);
  }
  caller.abort = undefined;
  u.live.reserved--;
  u.live.active++;
  load = 2;
  if (caller.gone) {
    // Left between the handshake's end and this turn.
    sock.destroy();
    release();
    return failOn(499, CLIENT_CLOSED);
  }
  // openTunnel hands the socket over paused; the target speaks only after our request, so nothing is lost.
  sock.resume();
  // Failures surface on the TLS socket / request; the raw socket must not throw an unhandled 'error'.
  sock.on('error', () => {});
  const conn = https
    ? // `host` is what the certificate is checked against (without it Node checks "localhost": an IP
      // literal could never verify); SNI carries names only.
      tls.connect({
        socket: sock,
        host,
        servername: parseIp(host) ? undefined : host,
        ALPNProtocols: ['http/1.1'],
      })
    : sock;
  return new Promise((resolve) => {
    let responded = false;
    let settled = false;
    let timedOut = false;
    let cut: (() => void) | undefined;
    let r: http.ClientRequest;
    try {
      r = http.request({
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        setHost: false,
        createConnection: () => conn,
        maxHeaderSize: MAX_RESPONSE_HEAD_BYTES,
      });
    } catch {
      // Node refused a field value before sending anything (ERR_INVALID_CHAR): the slot and the tunnel go
      // back now — thrown, they would be held for the life of the process.
      // Nothing reached the upstream: no outcome either way.
      release();
      conn.destroy();
      resolve(failOn(400, 'bad_request'));
      return;
    }
    const atDeadline = () => {
      const more = renewed();
      if (more > 0) {
        timer = setTimeout(atDeadline, more);
        return;
      }
      timedOut = true;
      r.destroy();
      cut?.();
    };
    let timer = setTimeout(atDeadline, left());
    const done = () => {
      clearTimeout(timer);
      release();
      conn.destroy();
    };
    r.on('response', (res) => {
      responded = true;
      caller.abort = undefined;
      outcome('RESPONSE_HEADERS', true, res.statusCode);
      resolve({
        ok: true,
        response: res,
        route: route.name,
        done: (broken) => {
          done();
          bodyOver(broken, timedOut);
        },
        onDeadline: (c) => {
          cut = c;
        },
      });
    });
    const failed = (f: FetchFailure) => {
      if (responded || settled) return;
      settled = true;
      caller.abort = undefined;
      done();
      if (caller.gone) return resolve(failOn(499, CLIENT_CLOSED));
      // A head that did not come within the caller's own, shorter timeoutMs is no evidence against the
      // proxy (a client asking for 100 ms could otherwise fail a sticky proxy on the passive track); one
      // that did not come within the gateway's own bound is, as ambiguous as any RESPONSE_HEADERS failure.
      if (!(timedOut && notTheProxys())) outcome('RESPONSE_HEADERS', false);
      resolve(timedOut ? failOn(504, FETCH_TIMEOUT) : f);
    };
    caller.abort = () => r.destroy();
    r.on('error', (err: NodeJS.ErrnoException) =>
      failed(failOn(502, 'target_failed', err.code ? { reason: err.code } : undefined)),
    );
    // A 101 (or any upgrade) has no 'upgrade' listener here: Node destroys the socket and emits only
    // 'close' — no 'response', no 'error'. Without this the promise never settled and the slot was held
    // for the life of the process (the timer's destroy() of a destroyed request emits nothing either).
    r.on('close', () => failed(failOn(502, 'target_bad_response')));
    r.end(body);
  });
}
