// The forward-proxy listener (HTTP CONNECT and absolute-URI HTTP) on a raw net.Server: a proxy needs only
// the request head, and http.Server's per-request machinery is what makes proxy-chain (built on it) cost
// 1.5–2x this listener's CPU per request in bench/gateway.ts. Owns the
// per-listener context the sessions share, the deadline sweep and the drain on shutdown.
import net from 'node:net';
import { listenOn } from '../../../shared/src/adapters/listen.js';
import type { ClientAuth } from './client-auth.js';
import type { GatewayRecorder } from './metrics.js';
import type { PreAuthGate } from './pre-auth-gate.js';
import { ProxySession } from './proxy-session.js';
import {
  type Owned,
  onClientClose,
  onClientData,
  onClientEnd,
  onClientError,
  SESSION,
} from './session-listeners.js';
import type { SocketCounts } from './sockets.js';
import type { TargetGuard } from './target-guard.js';
import type { UpstreamPool } from './upstream-pool.js';
import type { GatewayWorker } from './worker.js';

export interface ProxyListenerOptions {
  /** Request head limit; larger heads get 431. */
  maxHeaderBytes: number;
  /** Slowloris bound: a head not complete by then gets 408. */
  headerTimeoutMs: number;
  /** Dial + CONNECT handshake with the upstream. */
  upstreamTimeoutMs: number;
  /** A tunnel with no byte either way for this long is closed. */
  idleTimeoutMs: number;
  /** How long a client may keep its side open after we finished ours. */
  lingerMs: number;
  /** Open client connections beyond this are refused at accept (fd exhaustion is not an option). */
  maxConnections: number;
}

export interface ProxyContext {
  readonly worker: GatewayWorker;
  readonly auth: ClientAuth;
  readonly guard: TargetGuard;
  readonly recorder: GatewayRecorder;
  readonly sockets: SocketCounts;
  readonly opts: ProxyListenerOptions;
  /** Every open client connection: swept for head, upstream, idle and linger deadlines. */
  readonly sessions: Set<ProxySession>;
  /** Kept-alive upstream connections for absolute-form plain HTTP (upstream-pool.ts), shared with /v1/fetch. */
  readonly pool: UpstreamPool;
  /** Each source address's share of the connections whose request is not admitted yet. */
  readonly preAuth: PreAuthGate;
}

export interface ProxyListener {
  readonly server: net.Server;
  listen(port: number, host: string): Promise<number>;
  /** Stops accepting; open sessions carry on. */
  stopAccepting(): Promise<void>;
  /**
   * Ends every remaining session at once (after the drain bound), its slot given back and nothing reported
   * against its proxy before any socket closes (ProxySession.cut).
   */
  destroyAll(): void;
}

export function createProxyListener(
  deps: Omit<ProxyContext, 'sessions' | 'opts'>,
  opts: ProxyListenerOptions,
  onError: (err: Error) => void,
): ProxyListener {
  const ctx: ProxyContext = { ...deps, opts, sessions: new Set() };
  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    // Before anything is set up for it: a source at its share of unadmitted connections gets no more.
    if (!ctx.preAuth.admit(socket)) {
      socket.destroy();
      return;
    }
    const c = socket as Owned;
    const s = new ProxySession(c, ctx, performance.now());
    c[SESSION] = s;
    ctx.sessions.add(s);
    ctx.sockets.proxyClients++;
    c.on('data', onClientData);
    c.on('end', onClientEnd);
    c.on('error', onClientError);
    c.on('close', onClientClose);
  });
  server.maxConnections = opts.maxConnections;
  // One sweep instead of timers per connection: every deadline here is fine to ~250 ms. Monotonic: a wall
  // clock stepped forward (NTP, a host migration) timed out every session in DIAL or HANDSHAKE at once,
  // each a DIAL or PROXY_HANDSHAKE failure against its proxy; stepped back, it stretched every bound.
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const s of ctx.sessions) s.sweep(now);
  }, 250);
  sweep.unref();
  return {
    server,
    // Accept failures once listening (EMFILE under a connection flood) are reported, never fatal.
    listen: (port, host) => listenOn(server, port, host, onError),
    stopAccepting: async () => {
      // close() stops the listening socket now; its callback would wait for every connection.
      if (server.listening) server.close();
      // Sessions still reading a head have sent no request yet: they are told and let go now.
      for (const s of ctx.sessions) if (s.readingHead) s.refuse(503, 'shutting_down');
    },
    destroyAll: () => {
      clearInterval(sweep);
      for (const s of ctx.sessions) s.cut();
    },
  };
}
