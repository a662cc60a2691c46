// The forward-proxy listener (HTTP CONNECT and absolute-URI HTTP) on a raw net.Server: measured faster
// than http.Server for a proxy that only needs the request head (see bench/gateway.ts). Owns the
// per-listener context the sessions share, the header-timeout sweep and the drain on shutdown.
import net from 'node:net';
import type { ClientAuth } from './client-auth.js';
import type { GatewayRecorder } from './metrics.js';
import {
  type Owned,
  onClientClose,
  onClientData,
  onClientEnd,
  onClientError,
  onClientTimeout,
  ProxySession,
  SESSION,
} from './proxy-session.js';
import type { SocketCounts } from './sockets.js';
import type { TargetGuard } from './target-guard.js';
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
}

export interface ProxyContext {
  readonly worker: GatewayWorker;
  readonly auth: ClientAuth;
  readonly guard: TargetGuard;
  readonly recorder: GatewayRecorder;
  readonly sockets: SocketCounts;
  readonly opts: ProxyListenerOptions;
  /** Sessions still reading their head (swept for the header timeout). */
  readonly pending: Set<ProxySession>;
  readonly sessions: Set<ProxySession>;
}

export interface ProxyListener {
  readonly server: net.Server;
  listen(port: number, host: string): Promise<number>;
  /** Stops accepting; open sessions carry on. */
  stopAccepting(): Promise<void>;
  /** Ends every remaining session at once (after the drain bound). */
  destroyAll(): void;
}

export function createProxyListener(
  deps: Omit<ProxyContext, 'pending' | 'sessions' | 'opts'>,
  opts: ProxyListenerOptions,
): ProxyListener {
  const ctx: ProxyContext = { ...deps, opts, pending: new Set(), sessions: new Set() };
  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    const c = socket as Owned;
    const s = new ProxySession(c, ctx, Date.now() + opts.headerTimeoutMs);
    c[SESSION] = s;
    ctx.sessions.add(s);
    ctx.pending.add(s);
    ctx.sockets.proxyClients++;
    c.on('data', onClientData);
    c.on('end', onClientEnd);
    c.on('error', onClientError);
    c.on('close', onClientClose);
    c.on('timeout', onClientTimeout);
  });
  // One sweep instead of a timer per connection: the header timeout needs no better than ~250 ms.
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const s of ctx.pending) if (s.deadline <= now) s.refuse(408, 'header_timeout');
  }, 250);
  sweep.unref();
  return {
    server,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host }, () => {
          server.off('error', reject);
          resolve((server.address() as net.AddressInfo).port);
        });
      }),
    stopAccepting: async () => {
      clearInterval(sweep);
      // close() stops the listening socket now; its callback would wait for every connection.
      if (server.listening) server.close();
      // Sessions still reading a head have sent no request yet: they are told and let go now.
      for (const s of ctx.pending) s.refuse(503, 'shutting_down');
    },
    destroyAll: () => {
      for (const s of ctx.sessions) s.client.destroy();
    },
  };
}
