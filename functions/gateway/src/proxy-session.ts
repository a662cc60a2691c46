// One client connection on the proxy listener, as a small state machine over raw sockets:
//   HEAD (read + parse the request head) → CHECK (SSRF guard, maybe a DNS look-up) → DIAL (TCP to the
//   upstream) → HANDSHAKE (CONNECT to the pinned target address through the upstream) → TUNNEL (bytes
//   piped both ways) — or, for pinned plain HTTP, RESPONSE (origin-form request written through the
//   tunnel, waiting for the target's response head, rewritten for the client) → TUNNEL (body piped back).
// Plain HTTP to an upstream that filters destinations itself goes in absolute form over a pooled
// connection instead (plain-forward.ts): DIAL (a pooled or new connection) → RESPONSE → TUNNEL (body).
// A SOCKS5 upstream has the same states, its HANDSHAKE a SOCKS5 CONNECT to the pinned address
// (dialSocks5: the one branch on the upstream's protocol, taken when it is dialled).
// Socket events reach the session through module-level listeners (session-listeners.ts: `this` is the
// socket, the session hangs off a symbol), so a request allocates no closures; whether a request is let
// in at all is decided from its head by admission.ts. Pinned plain HTTP is carried through a CONNECT
// tunnel: that is how the target address checked by the guard is the one the upstream connects to,
// while the client's Host header reaches the target untouched.

import net from 'node:net';
import { headerStickyKey } from '../../../shared/src/domain/gateway/pick.js';
import type { CompiledRoute, Upstream } from '../../../shared/src/domain/gateway/routing.js';
import type { TargetDecision } from '../../../shared/src/domain/gateway/ssrf.js';
import type { StickyKey } from '../../../shared/src/messages/gateway-snapshot.js';
import { admit } from './admission.js';
import type { UpstreamAuth } from './compile.js';
import {
  absoluteUrl,
  formatAuthority,
  forwardedHeaders,
  HEAD_END,
  header,
  originFormHead,
  parseRequestHead,
  type RequestHead,
  statusOf,
} from './head.js';
import type { OutcomeStage } from './outcomes.js';
import { pinnedHeads } from './pinned-response.js';
import { type ForwardOwner, PlainForward } from './plain-forward.js';
import type { ProxyContext } from './proxy-listener.js';
import { mayRideWithConnect } from './request-target.js';
import { MAX_RESPONSE_HEAD_BYTES } from './response-head.js';
import { ESTABLISHED, errorResponse } from './responses.js';
import {
  ignore,
  type Owned,
  onClientBody,
  onClientData,
  onDetachedUpClose,
  onUpClose,
  onUpConnect,
  onUpData,
  onUpDrain,
  onUpEnd,
  onUpError,
  SESSION,
} from './session-listeners.js';
import { socks5Handshake } from './socks5-handshake.js';
import {
  evidenceStage,
  MAX_CONNECT_ANSWER_HEAD,
  type TunnelError,
  tunnelRefusal,
  UNREADABLE_CONNECT_ANSWER,
  upstreamCode,
} from './upstream-tunnel.js';

const HEAD = 0;
const CHECK = 1;
const DIAL = 2;
const HANDSHAKE = 3;
const RESPONSE = 4;
const TUNNEL = 5;
const DONE = 6;

/** Past the deadline, when the sweep ends a SOCKS5 handshake whose own timer has not (socks5Handshake). */
const SOCKS5_BACKSTOP_MS = 1000;

export class ProxySession implements ForwardOwner {
  state = HEAD;
  private buf: Buffer | null = null;
  private scanned = 0;
  /** Bytes of a partial request head at the start of `buf` (HEAD only; `buf` may have room after them). */
  private held = 0;
  private head: RequestHead | null = null;
  private rest: Buffer | null = null;
  private user = '';
  private isConnect = false;
  private host = '';
  private port = 0;
  private path = '';
  private hostHeader = '';
  private pinned = '';
  /** The target's address as the SSRF guard checked it (a SOCKS5 upstream is asked for it). */
  private address = '';
  /** One redial per request (redial()). */
  private redialed = false;
  /** A pick of this request fell back to a SUSPECT upstream, counted once (worker.ts pick `counted`). */
  private fellBack = false;
  /** The request came with a body (Content-Length > 0). */
  private hadBody = false;
  /** Pinned plain HTTP whose Host names another target: its request waits for the upstream's 200. */
  private requestHeld = false;
  private bodyLeft = 0;
  private route: CompiledRoute<UpstreamAuth> | null = null;
  private upstream: Upstream<UpstreamAuth> | null = null;
  /** 0: holds nothing, 1: counted in reserved, 2: counted in active. */
  private load = 0;
  private up: Owned | null = null;
  /** Absolute-form plain HTTP over a pooled upstream connection (instead of `up`). */
  private fwd: PlainForward | null = null;
  private t0 = 0;
  private handshakeMs = 0;
  private outcomeDone = false;
  private upstreamFailed = false;
  /** What the sweep enforces in the current state: head complete, upstream handshake done, next byte. */
  private deadline: number;
  private lastBytes = -1;
  /** Pinned plain HTTP: the target's response head so far (RESPONSE only), its length, where to search on. */
  private resp: Buffer | null = null;
  private respHeld = 0;
  private respScan = 0;
  /** Pinned plain HTTP: bytes of the target's interim (1xx) heads taken so far, capped (onTargetData). */
  private interimBytes = 0;
  /** Once our side is done: when a client that keeps its side open is cut. 0 = not lingering. */
  private lingerUntil = 0;
  /** The client's queued bytes at the last sweep while lingering (0: the linger runs). */
  private lingerPending = 0;
  /** The client's FIN is in (onClientEnd): GATEWAY_LINGER_MS of silence then ends the session. */
  private clientEnded = false;

  constructor(
    readonly client: Owned,
    private readonly ctx: ProxyContext,
    now: number,
  ) {
    this.deadline = now + ctx.opts.headerTimeoutMs;
  }

  get readingHead(): boolean {
    return this.state === HEAD;
  }

  /**
   * Called by the listener's sweep (every 250 ms) instead of a timer per socket: a socket timeout is
   * re-armed on every read and write, which the bench showed costing more than the rest of the tunnel's
   * JavaScript put together.
   */
  sweep(now: number): void {
    const st = this.state;
    // On an upstream past the ownership grant (the snapshot's validUntil) or past its own hard expiry
    // (contract seed §3: the entry's expiresAt, while the latest snapshot lists it; worker.ts
    // expiredProxies): the controller may give the proxy to another worker once the grant has lapsed.
    // Before any byte of the answer went out the client is told why, as a request arriving now would be; a
    // tunnel or a response under way is cut, and so is a session lingering still on it (a pinned tunnel
    // holds its slot until the client closes, its client may still be sending its body up it; an
    // absolute-form answer gave its slot back once the exchange was whole: forwardDone). The same for an
    // upstream whose drain away from this worker outlived GATEWAY_PROXY_DRAIN_TIMEOUT_MS (drain-bound.ts):
    // the controller waits for its counts to reach zero. Read per sweep, never per request.
    if (this.load !== 0) {
      const w = this.ctx.worker;
      const over = w.grantOver;
      const u = this.upstream!;
      const expired = w.expiredProxies.size !== 0 && w.expiredProxies.has(u.name);
      if (over || u.live.cut || expired) {
        if (st === TUNNEL || this.lingerUntil !== 0) this.cutClient();
        else this.refuse(503, over ? 'snapshot_stale' : 'upstream_withdrawn');
        return;
      }
    }
    if (this.lingerUntil !== 0) {
      // Our side is done, but the tail of the answer may still be queued for a reader slower than the
      // target (a pipe ends our side once the last chunk is handed over, not once it is written): that
      // tail was cut off GATEWAY_LINGER_MS after the target's end. The linger for the client to close its
      // side starts once nothing is queued (what the kernel holds still goes out after a close); until
      // then a reader that stops reading is cut by the idle timeout, as in the middle of an answer.
      const pending = this.client.writableLength;
      if (pending !== this.lingerPending) {
        this.lingerPending = pending;
        const o = this.ctx.opts;
        this.lingerUntil = now + (pending === 0 ? o.lingerMs : o.idleTimeoutMs);
      } else if (now >= this.lingerUntil) this.cutClient();
      return;
    }
    if (st === HEAD) {
      if (now >= this.deadline) this.refuse(408, 'header_timeout');
    } else if (st === DIAL) {
      if (now >= this.deadline) this.failStage('DIAL', 504, 'upstream_timeout');
    } else if (st === HANDSHAKE) {
      // An http upstream's CONNECT went out with its connection: not one byte answered, the target may be
      // what it still waits for (evidenceStage). A SOCKS5 handshake's own timer, set to this deadline,
      // answers for that path: it alone knows whether only the CONNECT's reply was missing. The sweep must
      // not beat it to the deadline (a sweep lands up to 250 ms past it, the timer on the loop's clock) and
      // blame the proxy for a slow target, so it is only the timer's backstop.
      if (this.upstream?.auth.socks5) {
        if (now >= this.deadline + SOCKS5_BACKSTOP_MS)
          this.failStage('PROXY_HANDSHAKE', 504, 'upstream_timeout');
      } else if (now >= this.deadline)
        this.failStage(
          evidenceStage('timeout', 'PROXY_HANDSHAKE', this.buf === null),
          504,
          'upstream_timeout',
        );
    } else if (st === RESPONSE || st === TUNNEL) {
      const c = this.client;
      const bytes = c.bytesRead + c.bytesWritten;
      if (bytes !== this.lastBytes) {
        this.lastBytes = bytes;
        const o = this.ctx.opts;
        this.deadline = now + (this.clientEnded ? o.lingerMs : o.idleTimeoutMs);
      } else if (now >= this.deadline) {
        // No answer begun (RESPONSE): a 504 rather than a bare close. A client that half-closed once it had
        // asked (HTTP/1.0 style, `nc -N`) is still reading, and learns why it got no answer; one that
        // closed outright looks the same from here (a FIN either way), and the 504 costs it nothing. Its
        // linger is its own bound, no evidence against the proxy (as on /v1/fetch), and so is a wait for
        // a request body the client still owes; a head that did not come within the idle timeout for a
        // request sent whole is a failed RESPONSE_HEADERS outcome (contract seed §5), as on /v1/fetch.
        if (st !== RESPONSE) this.cutClient();
        else if (this.clientEnded || this.bodyLeft > 0) this.refuse(504, 'upstream_timeout');
        else this.failStage('RESPONSE_HEADERS', 504, 'upstream_timeout');
      }
    }
  }

  onHeadData(chunk: Buffer): void {
    const max = this.ctx.opts.maxHeaderBytes;
    let buf = chunk;
    if (this.held > 0) {
      // A head in pieces is appended in place, the room doubling (up to the head limit) when it runs out:
      // a fresh concat per read copied everything held so far each time, so a head dribbled a byte per
      // segment cost O(n²) — ~250 ms of CPU for 16 KiB, from a client that need not authenticate.
      const len = this.held + chunk.length;
      let room = this.buf!;
      if (len > room.length) {
        const grown = Buffer.allocUnsafe(Math.max(len, Math.min(room.length * 2, max)));
        room.copy(grown, 0, 0, this.held);
        this.buf = room = grown;
      }
      chunk.copy(room, this.held);
      buf = room.subarray(0, len);
    }
    const end = buf.indexOf(HEAD_END, this.scanned);
    if (end < 0 || end + 4 > max) {
      if (buf.length > max) {
        this.refuse(431, 'header_too_large');
        return;
      }
      if (this.held === 0) this.buf = buf;
      this.held = buf.length;
      this.scanned = Math.max(0, buf.length - 3);
      return;
    }
    this.client.removeListener('data', onClientData);
    this.client.pause();
    this.head = parseRequestHead(buf.toString('latin1', 0, end));
    this.rest = end + 4 < buf.length ? buf.subarray(end + 4) : null;
    this.buf = null;
    this.held = 0;
    this.state = CHECK;
    this.dispatch(this.head);
  }

  private dispatch(h: RequestHead | null): void {
    const a = admit(h, this.ctx);
    if (!a.ok) {
      this.refuse(a.status, a.code);
      return;
    }
    // Authenticated: no longer held against its source's share (pre-auth-gate.ts).
    this.ctx.preAuth.release(this.client);
    this.user = a.user;
    this.isConnect = a.connect;
    this.host = a.host;
    this.port = a.port;
    this.path = a.path;
    this.hostHeader = a.hostHeader;
    this.bodyLeft = a.bodyLength;
    this.hadBody = a.bodyLength > 0;
    const d = this.ctx.guard.check(this.host, this.port);
    if (d instanceof Promise) {
      const worker = this.ctx.worker;
      worker.checking++;
      d.then((r) => {
        worker.checking--;
        this.afterGuard(r);
      });
    } else this.afterGuard(d);
  }

  private afterGuard(d: TargetDecision): void {
    if (this.state !== CHECK) return;
    // A look-up can outlast the snapshot's freshness: no pick from a stale one. A shutdown that began
    // meanwhile drains this request like any other admitted before it (the drain waited for the look-up),
    // on a snapshot still fresh.
    const refusal = this.ctx.worker.refusalAfterLookup();
    if (refusal) {
      this.refuse(503, refusal);
      return;
    }
    if (!d.allow) {
      if (d.reason === 'unresolvable') {
        this.refuse(502, 'target_unresolvable');
        return;
      }
      this.ctx.recorder.ssrfRefused('proxy', d.reason);
      this.refuse(403, 'ssrf_refused', { reason: d.reason });
      return;
    }
    const picked = this.ctx.worker.pick(this.host, Date.now(), this);
    if (picked.kind !== 'ok') {
      this.route = picked.kind === 'no_upstream' ? picked.route : null;
      this.refuse(503, picked.kind);
      return;
    }
    this.route = picked.route;
    this.fellBack = picked.fellBack;
    this.address = d.address;
    this.pinned = formatAuthority(d.address, this.port);
    this.useUpstream(picked.upstream);
  }

  /** The request goes to `u`: its slot reserved, the upstream deadline set, then the dial its kind needs. */
  private useUpstream(u: Upstream<UpstreamAuth>): void {
    this.upstream = u;
    u.live.reserved++;
    this.load = 1;
    this.t0 = performance.now();
    this.deadline = this.t0 + this.ctx.opts.upstreamTimeoutMs;
    if (!this.isConnect && u.auth.absoluteUri) {
      this.forwardAbsolute(u);
      return;
    }
    if (u.auth.socks5) {
      this.dialSocks5(u, this.address);
      return;
    }
    const up = this.dial(u);
    up.on('connect', onUpConnect);
    up.on('data', onUpData);
  }

  /**
   * A dial that failed before the upstream took a byte — refused, unreachable, closed before it
   * connected — sent the request nowhere, so it goes to another of the route's proxies, once: a proxy
   * that has just died (a VM preempted, a provider's endpoint gone) otherwise failed its share of every
   * route's requests until the passive signals and the probe took it out of the snapshot, about a
   * minute. The failed dial is still reported (its DIAL outcome feeds that passive health); the proxy is
   * not picked again for this request, and a sticky key on it moves, as off any unusable proxy. Not
   * after the dial's timeout (that has spent GATEWAY_UPSTREAM_TIMEOUT_MS already), not for an
   * absolute-form request with a body (its bytes went to the failed forward), and only as a request
   * whose look-up came back may pick (worker.ts refusalAfterLookup, the rule /v1/fetch's redial follows
   * too): a drain serves what it admitted, but never from a snapshot past its stale age or its grant.
   * Returns false when the caller answers the failure as before.
   */
  private redial(): boolean {
    const failed = this.upstream;
    if (this.redialed || !failed || (this.fwd !== null && this.hadBody)) return false;
    const worker = this.ctx.worker;
    if (worker.refusalAfterLookup() !== null) return false;
    // Avoided by name (pick.ts): a swap since the first pick compiled a new entry for the proxy, which
    // must stay out too.
    const picked = worker.pick(this.host, Date.now(), this, failed, this.fellBack);
    if (picked.kind !== 'ok') return false;
    this.fellBack = picked.fellBack;
    this.redialed = true;
    this.ctx.recorder.redialed('proxy');
    this.recordOutcome('DIAL', false);
    this.outcomeDone = false;
    // Active, not reserved, when an absolute-form forward had a pooled connection, dropped under it, and
    // its retry's fresh dial was refused (forwardFailed).
    this.releaseSlot();
    if (this.state === RESPONSE) {
      // That forward's request was under way: established() listens for the body again on the next one.
      this.client.removeListener('data', onClientBody);
      this.client.pause();
    }
    const old = this.up;
    if (old) {
      // Its 'close' is still to come: it only gives its socket count back (onDetachedUpClose).
      this.up = null;
      old.removeListener('error', onUpError);
      old.removeListener('end', onUpEnd);
      old.removeListener('close', onUpClose);
      old.removeListener('connect', onUpConnect);
      old.removeListener('data', onUpData);
      old.on('error', ignore);
      old.once('close', onDetachedUpClose);
      old.destroy();
    }
    this.fwd?.abort();
    this.fwd = null;
    this.route = picked.route;
    this.useUpstream(picked.upstream);
    return true;
  }

  onDetachedUpClose(): void {
    this.ctx.sockets.upstreams--;
  }

  /**
   * TCP to the upstream, owned by this session and counted until it closes; what happens on connect is
   * the caller's (an HTTP CONNECT or the SOCKS5 handshake). noDelay: a tunnel relays whatever arrives as
   * soon as it arrives (TLS handshakes are several small flights); Nagle would hold a small write back
   * until the previous one is acknowledged.
   */
  private dial(u: Upstream<UpstreamAuth>): Owned {
    const up = net.connect({ host: u.host, port: u.port, allowHalfOpen: true, noDelay: true }) as Owned;
    up[SESSION] = this;
    this.up = up;
    this.ctx.sockets.upstreams++;
    up.on('error', onUpError);
    up.on('end', onUpEnd);
    up.on('close', onUpClose);
    this.state = DIAL;
    return up;
  }

  /**
   * The upstream resolves and filters the destination itself (our squid: docs/cloud-init.md), so the
   * request goes in absolute form with the host name, over a kept-alive connection to the upstream.
   */
  private forwardAbsolute(u: Upstream<UpstreamAuth>): void {
    const h = this.head!;
    this.state = DIAL;
    const fwd = new PlainForward(this, this.ctx.pool, {
      host: u.host,
      port: u.port,
      method: h.method,
      url: absoluteUrl({ host: this.host, port: this.port }, this.path),
      headers: forwardedHeaders(h, this.hostHeader, u.auth.authorization),
      authorization: u.auth.authorization,
      bodyLength: this.bodyLeft,
      clientHttp11: h.version === 'HTTP/1.1',
      dialTimeoutMs: this.ctx.opts.upstreamTimeoutMs,
    });
    this.fwd = fwd;
    try {
      fwd.start();
    } catch {
      // Node refuses a field value or a target it would not put on the wire (ERR_INVALID_CHAR,
      // ERR_UNESCAPED_CHARACTERS): nothing was sent.
      this.refuse(400, 'bad_request');
      return;
    }
    const body = this.rest;
    this.rest = null;
    if (body) this.onBody(body);
  }

  /**
   * A SOCKS5 upstream (socks5-handshake.ts): DIAL (TCP) → HANDSHAKE (the package's SOCKS5 CONNECT to the
   * pinned address) → as for an http upstream, a byte pipe (CONNECT) or the origin-form request
   * (plain HTTP), which cannot ride with the handshake as it does with an HTTP CONNECT. Never pooled: a
   * tunnel is bound to the target it was opened for. Promises and closures here are this path's only.
   */
  private dialSocks5(u: Upstream<UpstreamAuth>, address: string): void {
    // once: the socks package emits 'connect' again on the socket handed to it.
    this.dial(u).once('connect', () => this.socks5Connected(u, address));
  }

  private socks5Connected(u: Upstream<UpstreamAuth>, address: string): void {
    if (this.state !== DIAL) return;
    this.state = HANDSHAKE;
    const hop = { host: u.host, port: u.port, credentials: u.auth.socks5?.credentials ?? null };
    const left = Math.max(1, this.deadline - performance.now());
    socks5Handshake(this.up!, hop, address, this.port, left).then(
      () => this.socks5Established(),
      (e: TunnelError) => {
        // Refused, closed or timed out meanwhile: the session has answered already.
        if (this.state !== HANDSHAKE) return;
        const r = tunnelRefusal(e);
        this.recordOutcome(evidenceStage(e.kind, e.stage, e.answerAwaited), false);
        this.refuse(r.status, r.code, r.detail);
      },
    );
  }

  private socks5Established(): void {
    if (this.state !== HANDSHAKE) return;
    const up = this.up!;
    if (this.isConnect) {
      this.established(null);
      return;
    }
    up.on('data', onUpData);
    up.write(originFormHead(this.head!, this.path, this.hostHeader), 'latin1');
    const body = this.rest;
    this.rest = null;
    if (body) this.onBody(body);
    this.established(null);
    // The handshake hands the socket over paused (any early target bytes back in its buffer).
    up.resume();
  }

  forwardConnected(): void {
    if (this.state === DIAL) this.established(null);
  }

  forwardFailed(stage: OutcomeStage, status: number, code: string, upstreamStatus?: number): void {
    // A DIAL failure sent the request nowhere, also when it is the fresh dial of a retry: the pooled
    // connection taken first had connected (the session is in RESPONSE), then the upstream dropped it —
    // a proxy that has just died refuses the new one. Not a retry's dial that timed out: it has spent
    // GATEWAY_UPSTREAM_TIMEOUT_MS already, as a tunnel's timed-out dial is not redialled either.
    if (
      stage === 'DIAL' &&
      code !== 'upstream_timeout' &&
      (this.state === DIAL || this.fwd?.retried) &&
      this.redial()
    )
      return;
    this.failStage(stage, status, code, upstreamStatus);
  }

  forwardResponse(status: number, proxyChallenge: boolean, proxyErrorPage: boolean): boolean {
    if (this.state !== RESPONSE) return false;
    if (proxyChallenge) {
      // The upstream refused our credentials (in absolute form there is no handshake to fail). A 407
      // without a challenge is the target's own, relayed: it goes through like any response.
      this.failStage('PROXY_HANDSHAKE', 502, 'upstream_auth_failed', status);
      return false;
    }
    // The upstream's own error page goes through as its answer, but it is no success of the proxy's: the
    // target was not reached (a RESPONSE_HEADERS failure, which health counts only for a proxy with no
    // success at all: the target may be what is down).
    this.recordOutcome('RESPONSE_HEADERS', !proxyErrorPage, status);
    this.ctx.recorder.request('proxy', this.route!.name, 'ok');
    this.state = TUNNEL;
    return true;
  }

  forwardDone(): void {
    // The response is whole; give the client a bounded time to close its own side.
    const c = this.client;
    if (!c.writableEnded) c.end();
    // The upstream is done with once the request left whole too (its connection is back in the pool): the
    // slot goes back now, not when the client closes — held, it counted in the runtime reports and in the
    // proxy's capacity, kept a SIGTERM drain waiting, and the sweep's cut of an upstream being let go cut
    // a client still being sent the tail of its answer. A request body still queued keeps it until then —
    // and so does the answer's own tail still queued for a slow reader (up to a high-water mark and a
    // chunk): a SIGTERM drain that saw no slot on the upstream would destroy the client with it unsent.
    if (this.fwd?.settled) {
      if (c.writableLength === 0) this.releaseSlot();
      else c.once('finish', () => this.releaseSlot());
    }
    this.linger();
  }

  forwardBroken(): void {
    this.upstreamFailed = true;
    this.cutClient();
  }

  bodyDrained(): void {
    this.onUpDrain();
  }

  /** StickySource for the worker's pick: a header of this request, or the client's user name. */
  stickyValue(key: StickyKey): string | undefined {
    if ('header' in key)
      return this.head ? headerStickyKey(this.user, header(this.head, key.header)) : undefined;
    return this.user || undefined;
  }

  stickyOwner(): string {
    return this.user;
  }

  onUpConnect(): void {
    this.state = HANDSHAKE;
    const a = this.pinned;
    const connect = `CONNECT ${a} HTTP/1.1\r\nHost: ${a}\r\n${this.upstream!.auth.line}\r\n`;
    if (this.isConnect) {
      this.up!.write(connect, 'latin1');
      return;
    }
    // Plain HTTP: the request rides in the same segment as the CONNECT, saving a round trip, when the
    // target is an address and its Host names it. Otherwise it waits for the 200: an upstream that
    // refuses the CONNECT yet reads on could take it as a request of its own and fetch whatever that Host
    // names, or resolves a name to now (request-target.ts mayRideWithConnect). If the upstream refuses,
    // the socket is dropped either way.
    if (!mayRideWithConnect(this.head!, this.hostHeader, this.host, this.port)) {
      this.up!.write(connect, 'latin1');
      this.requestHeld = true;
      return;
    }
    this.up!.write(connect + originFormHead(this.head!, this.path, this.hostHeader), 'latin1');
    this.sendRest();
  }

  /** The body bytes that came with the head, once the request is on its way. */
  private sendRest(): void {
    const body = this.rest;
    this.rest = null;
    if (body) this.onBody(body);
  }

  onUpData(chunk: Buffer): void {
    if (this.state === RESPONSE) {
      this.onTargetData(chunk);
      return;
    }
    const buf = this.buf ? Buffer.concat([this.buf, chunk]) : chunk;
    if (this.state === HANDSHAKE) {
      const end = buf.indexOf(HEAD_END);
      if (end < 0) {
        if (buf.length > MAX_CONNECT_ANSWER_HEAD) {
          // Not an answer the gateway can read: the code /v1/fetch gives it too (upstream-tunnel.ts).
          this.failStage('PROXY_HANDSHAKE', 502, upstreamCode(UNREADABLE_CONNECT_ANSWER));
          return;
        }
        this.buf = buf;
        return;
      }
      this.buf = null;
      const status = statusOf(buf);
      if (status !== 200) {
        const kind = status === 407 ? 'auth_failed' : 'refused';
        this.failStage(evidenceStage(kind, 'PROXY_HANDSHAKE'), 502, upstreamCode(kind), status);
        return;
      }
      if (this.requestHeld) {
        this.up!.write(originFormHead(this.head!, this.path, this.hostHeader), 'latin1');
        this.sendRest();
      }
      this.established(end + 4 < buf.length ? buf.subarray(end + 4) : null);
      return;
    }
  }

  /**
   * Pinned plain HTTP: the target's bytes until its response head is complete, rewritten for the client
   * (pinned-response.ts: the target hop's fields out, `Connection: close` in); then the rest flows
   * untouched. A head in pieces is appended in place with doubling room and searched from where the last
   * search stopped, as the client's head is (onHeadData): a target dribbling a 64 KiB head a byte at a
   * time costs linear work.
   */
  private onTargetData(chunk: Buffer): void {
    let buf = chunk;
    if (this.respHeld > 0) {
      const len = this.respHeld + chunk.length;
      let room = this.resp!;
      if (len > room.length) {
        const grown = Buffer.allocUnsafe(Math.max(len, room.length * 2));
        room.copy(grown, 0, 0, this.respHeld);
        this.resp = room = grown;
      }
      chunk.copy(room, this.respHeld);
      buf = room.subarray(0, len);
    }
    const c = this.client;
    const h = pinnedHeads(buf, MAX_RESPONSE_HEAD_BYTES, this.head!.version === 'HTTP/1.1', this.respScan);
    if (!h.done) {
      // The interim heads of one response count against the response-head limit together: the 64 KiB
      // bound held for one unfinished head only, so a target sending `100 Continue` forever had every
      // head queued for the client (nothing pauses the upstream in this state), without end for one
      // that does not read — and kept the session alive past the idle sweep, which counts queued bytes.
      // Past it the answer is a bad one; a final 502 after 1xx heads is still a well-formed response.
      this.interimBytes += h.consumed;
      if (this.interimBytes > MAX_RESPONSE_HEAD_BYTES) {
        this.failStage('RESPONSE_HEADERS', 502, 'target_bad_response');
        return;
      }
    }
    // The head and the body bytes that came with it leave in one write, as they arrived.
    c.cork();
    if (h.out) c.write(h.out, 'latin1');
    if (!h.done) {
      c.uncork();
      // Interim heads went out; what follows is the start of the next head.
      const rest = buf.length - h.consumed;
      if (h.consumed > 0 || this.respHeld === 0) {
        // A copy: the room's first bytes must be ours to append to (never the socket's chunk itself).
        this.resp = rest > 0 ? Buffer.from(buf.subarray(h.consumed)) : null;
        this.respScan = 0;
      }
      this.respHeld = rest;
      if (h.consumed === 0) this.respScan = Math.max(0, buf.length - 3);
      return;
    }
    this.resp = null;
    this.respHeld = 0;
    const status = h.status;
    if (status === 0) {
      // No head it parses (pinned-response.ts): a bad answer, as the absolute-form path makes it. The
      // interim heads before it went out; a final 502 after them is still a well-formed response.
      c.uncork();
      this.failStage('RESPONSE_HEADERS', 502, 'target_bad_response');
      return;
    }
    this.recordOutcome('RESPONSE_HEADERS', true, status);
    this.ctx.recorder.request('proxy', this.route!.name, 'ok');
    this.state = TUNNEL;
    const up = this.up!;
    // 'end' stays listened to: the target's FIN is the end of its answer (onUpEnd).
    up.removeListener('data', onUpData);
    if (h.consumed < buf.length) c.write(buf.subarray(h.consumed));
    c.uncork();
    up.pipe(c);
  }

  private established(leftover: Buffer | null): void {
    const up = this.up!;
    const c = this.client;
    const u = this.upstream!;
    u.live.reserved--;
    u.live.active++;
    this.load = 2;
    this.handshakeMs = performance.now() - this.t0;
    this.deadline = this.t0 + this.handshakeMs + this.ctx.opts.idleTimeoutMs;
    if (this.isConnect) {
      this.state = TUNNEL;
      this.ctx.recorder.request('proxy', this.route!.name, 'ok');
      // The proxy has done its part: the tunnel's success is reported now (latency: the handshake's), as a
      // plain-HTTP answer's is when its head is in. Reported at the tunnel's end, a crawler's tunnels held
      // for minutes left only the failures of that minute (a dead site's refusals) in the passive window,
      // and a proxy serving them well was judged as having no success at all (docs/health.md § The
      // PASSIVE track). An upstream failing mid-way adds a TUNNEL failure when the session ends (end()).
      this.recordOutcome('TUNNEL', true);
      up.removeListener('data', onUpData);
      up.removeListener('end', onUpEnd);
      c.write(ESTABLISHED);
      if (leftover) c.write(leftover);
      if (this.rest) up.write(this.rest);
      this.rest = null;
      up.pipe(c);
      c.pipe(up);
      return;
    }
    this.state = RESPONSE;
    c.on('data', onClientBody);
    c.resume();
    if (leftover) this.onUpData(leftover);
  }

  /** Forwards exactly Content-Length bytes of request body; anything after it is dropped. */
  onBody(chunk: Buffer): void {
    if (this.bodyLeft <= 0 || (!this.up && !this.fwd)) return;
    const n = Math.min(this.bodyLeft, chunk.length);
    this.bodyLeft -= n;
    const part = n === chunk.length ? chunk : chunk.subarray(0, n);
    if (this.fwd) {
      if (!this.fwd.writeBody(part, this.bodyLeft === 0)) this.client.pause();
      return;
    }
    if (!this.up!.write(part)) {
      this.client.pause();
      this.up!.once('drain', onUpDrain);
    }
  }

  /** Body back-pressure released; before the tunnel is up the client stays paused (established resumes it). */
  onUpDrain(): void {
    if (this.state === RESPONSE || this.state === TUNNEL) this.client.resume();
  }

  onUpError(): void {
    if (this.state === DIAL) {
      if (!this.redial()) this.failStage('DIAL', 502, 'upstream_dial_failed');
    }
    // Connected, then reset before answering: the upstream went away, as with a FIN (onUpEnd), so the
    // same code; `upstream_handshake_failed` is for an answer that is not the protocol's.
    else if (this.state === HANDSHAKE) this.failStage('PROXY_HANDSHAKE', 502, 'upstream_closed');
    else if (this.state === RESPONSE) this.failStage('RESPONSE_HEADERS', 502, 'target_failed');
    else if (this.state === TUNNEL) this.upstreamFailed = true;
  }

  /**
   * The upstream's FIN before the tunnel is up or the response head is in. The socket is half-open
   * (allowHalfOpen), so no 'close' would follow until the deadline: a SOCKS5 provider dropping clients
   * not on its allow-list after the greeting, an http proxy closing instead of answering. failStage
   * destroys the socket; its 'close' then finds the session DONE (and, on the SOCKS5 path, the package's
   * rejection finds the state no longer HANDSHAKE). A CONNECT tunnel stops listening at TUNNEL (a
   * half-closed tunnel still carries the client's bytes), so it pays nothing for it. Pinned plain HTTP
   * listens on: the target's FIN in TUNNEL is the end of its answer (the pipe has ended our side to the
   * client), and the client gets the linger to close its own, as after an absolute-form answer
   * (forwardDone). Without it the upstream socket stayed half-open, no 'close' came, and a client that
   * kept its side open held the session and its upstream slot until GATEWAY_IDLE_TIMEOUT_MS.
   */
  onUpEnd(): void {
    if (this.state === TUNNEL) this.linger();
    else this.upGone();
  }

  onUpClose(): void {
    this.ctx.sockets.upstreams--;
    if (this.state !== TUNNEL) this.upGone();
    else {
      const c = this.client;
      if (this.upstreamFailed) this.cutClient();
      else {
        // A clean end: the pipe has ended our side; give the client a bounded time to close its own.
        if (!c.writableEnded) c.end();
        this.linger();
      }
    }
  }

  /**
   * Cuts the client off (failure and timeout paths only). A FIN after part of a plain-HTTP answer with no
   * length (de-chunked for an HTTP/1.0 client, a pinned target's close-delimited body) reads as its
   * normal end: the client took the part for the whole page while the gateway reported a failed TUNNEL.
   * So an answer not all written out yet is reset, as /v1/fetch does (stream-body.ts), and the client
   * reads an error; one that went out whole still ends with a FIN. A CONNECT tunnel's bytes are the
   * client's to frame: it is reset only when its upstream failed (a reset, an error), mirroring it —
   * before, an upstream's reset reached the client as a FIN too.
   */
  private cutClient(state = this.state): void {
    const c = this.client;
    if (state === TUNNEL && (this.isConnect ? this.upstreamFailed : !c.writableFinished)) c.resetAndDestroy();
    else c.destroy();
  }

  /** Our side is done: the client gets GATEWAY_LINGER_MS to close its own (sweep). */
  private linger(): void {
    this.lingerUntil = performance.now() + this.ctx.opts.lingerMs;
  }

  private upGone(): void {
    if (this.state === DIAL) {
      if (!this.redial()) this.failStage('DIAL', 502, 'upstream_closed');
    } else if (this.state === HANDSHAKE) this.failStage('PROXY_HANDSHAKE', 502, 'upstream_closed');
    else if (this.state === RESPONSE) this.failStage('RESPONSE_HEADERS', 502, 'target_closed');
  }

  onClientEnd(): void {
    // Half-closed before a complete head: nothing more can arrive, so there is no request to serve.
    if (this.state === HEAD) this.client.destroy();
    // A FIN read before RESPONSE (with the request: 'end' comes even while the client is paused) is
    // only noted; the sweep's first pass in RESPONSE applies it (lastBytes starts at -1, so that pass
    // always sets the deadline). Once the answer is being relayed (TUNNEL), the FIN goes on to the target: a CONNECT tunnel's pipe carries it, and pinned
    // plain HTTP ends its upstream socket here (one request per connection: the client is done sending),
    // since a target that ignored our `Connection: close` kept its side open and held the session, with
    // its upstream slot, until GATEWAY_IDLE_TIMEOUT_MS after the client had gone. On every path the
    // session then ends after GATEWAY_LINGER_MS without a byte either way (sweep), not the idle timeout:
    // a client that closed says so only with its FIN (nothing is written to it while the target is
    // silent), so a target that never answers, stalls mid-body, or ignores the FIN and keeps its
    // connection open, held the session and its slot for the full idle timeout after every such request
    // — any site a crawler visits could pin a proxy's capacity that way. A half-closed client still
    // receiving bytes keeps it going; one that half-closed right after its request gets its answer if the
    // target begins it within the linger.
    else {
      this.clientEnded = true;
      const st = this.state;
      if (st !== RESPONSE && st !== TUNNEL) return;
      this.deadline = Math.min(this.deadline, performance.now() + this.ctx.opts.lingerMs);
      if (st === TUNNEL && !this.isConnect) this.up?.end();
    }
  }

  onClientClose(): void {
    this.ctx.sessions.delete(this);
    this.ctx.sockets.proxyClients--;
    this.ctx.preAuth.release(this.client);
    this.end();
  }

  /**
   * The drain's bound (gateway.ts shutdown): the session ends as if its client closed now, then the client
   * is cut. Ended before any socket closes: the shutdown cuts the clients, the pooled upstream connections
   * and /v1/fetch's in one go, and libuv runs their close callbacks last-closed-first — an absolute-form
   * request's pooled connection closed before its client did, and the session took the cut for the
   * upstream's failure (a broken answer, a head that never came, a dial failed and redialled to another
   * proxy), reported in the final report against a proxy that had done nothing wrong.
   */
  cut(): void {
    const state = this.state; // end() leaves DONE: the client is cut as what it was in
    this.end();
    this.cutClient(state);
  }

  /**
   * Upstream and slot given back, an upstream's failure mid-answer reported (the request's own outcome
   * went out when it was decided); the close that follows a cut finds the session DONE and reports
   * nothing more.
   */
  private end(): void {
    const prev = this.state;
    this.state = DONE;
    this.up?.destroy();
    this.fwd?.abort();
    this.releaseSlot();
    if (prev === TUNNEL) {
      // An upstream that failed mid-way (contract seed §5: TUNNEL, failed after the tunnel was
      // established): reported besides the outcome already recorded — plain HTTP's head, which told only
      // that the head came (a truncated answer counted as nothing but a success), or a CONNECT tunnel's
      // success at its establishment. A client leaving, or the gateway's own cut (grant, idle, drain),
      // adds nothing.
      if (this.upstreamFailed) {
        this.outcomeDone = false;
        this.recordOutcome('TUNNEL', false);
      }
    } else if (prev > HEAD && prev < TUNNEL)
      this.ctx.recorder.request('proxy', this.route?.name ?? '-', 'client_closed');
  }

  private failStage(stage: OutcomeStage, status: number, code: string, upstreamStatus?: number): void {
    if (this.state === DONE) return;
    this.recordOutcome(stage, false, upstreamStatus);
    this.refuse(status, code, upstreamStatus ? { upstreamStatus } : {});
  }

  /**
   * Answers with an error (only ever before any byte of a response went out, but for complete interim
   * heads: a final answer may follow those) and closes.
   */
  refuse(status: number, code: string, detail: Record<string, string | number> = {}): void {
    if (this.state === DONE) return;
    this.ctx.recorder.request('proxy', this.route?.name ?? '-', code);
    this.state = DONE;
    this.up?.destroy();
    this.fwd?.abort();
    // The upstream is done with: its slot goes back now, not when the client closes after reading the
    // answer — the proxy is no longer in use here (the counts the controller reads), and the sweep's cut
    // of sessions on an upstream being let go leaves this answer its linger.
    this.releaseSlot();
    const c = this.client;
    if (!c.writable) {
      c.destroy();
      return;
    }
    c.removeListener('data', onClientData);
    c.removeListener('data', onClientBody);
    c.on('data', ignore);
    c.resume();
    c.end(errorResponse(status, code, detail), 'latin1');
    this.linger();
  }

  /** Gives back the upstream slot this session holds (reserved while dialing, active once in use). */
  private releaseSlot(): void {
    const u = this.upstream;
    if (u && this.load === 1) u.live.reserved--;
    else if (u && this.load === 2) u.live.active--;
    this.load = 0;
  }

  private recordOutcome(stage: OutcomeStage, ok: boolean, status?: number): void {
    const u = this.upstream;
    if (this.outcomeDone || !u) return;
    this.outcomeDone = true;
    this.ctx.worker.recordOutcome({
      proxy: u.name,
      route: this.route?.name ?? '-',
      stage,
      ok,
      latencyMs: Math.round(stage === 'TUNNEL' ? this.handshakeMs : performance.now() - this.t0),
      target: `${this.host}:${this.port}`,
      status,
      at: Date.now(),
    });
  }
}
