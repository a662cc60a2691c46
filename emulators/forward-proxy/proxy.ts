// A small forward proxy: CONNECT tunnels and absolute-form HTTP, Basic proxy auth, anonymous by
// default. It is what every emulated Compute Engine instance runs (the real VM's startup script
// installs an equivalent), and the upstream in gateway tests and benchmarks, so the hot path is
// plain socket pipes. Its own net.Server accepts connections and hands them to a non-listening
// http.Server (a documented use of its 'connection' event); that split is what lets the fault
// switches refuse (kill), swallow (hang) or alter (leak) traffic the way a broken VM would.
import { Agent } from 'node:http';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { type CredentialSource, makeAuthorizer } from './auth.js';
import { connectPortAllowed, connectPortRule } from './connect-ports.js';
import type { ProxyContext, ProxyCounters, ProxyTimeouts } from './context.js';
import { connectionFrom } from './dial.js';
import { createHttpFront, startHeadTimeouts } from './http-front.js';
import { serveSocks5 } from './socks5-front.js';

/** What the proxy speaks to its clients: HTTP (CONNECT and absolute-form) or SOCKS5 (CONNECT only). */
export type ProxyProtocol = 'http' | 'socks5';

export type ProxyLog = (
  severity: 'DEBUG' | 'WARNING' | 'ERROR',
  message: string,
  fields?: Record<string, unknown>,
) => void;

export interface ForwardProxyOptions extends Partial<ProxyTimeouts> {
  host?: string;
  /** 0 (the default) picks a free port; revive() reuses whichever port the first listen got */
  port?: number;
  credentials?: CredentialSource;
  /**
   * Source address for connections to targets. Set it to the listen address when that stands for a
   * machine's own IP (an emulated VM), so origins see the proxy's address as the client, as on GCE.
   * Used for IPv4 loopback targets only (source-address.ts): others are reached from the default source.
   */
  localAddress?: string;
  /**
   * The only ports a CONNECT may reach (HTTP: 403 Forbidden before credentials are asked, as squid's
   * `deny CONNECT !SSL_ports`; SOCKS5: reply 2, not allowed by ruleset). Absent: any port. An emulated
   * VM passes its startup script's list; absolute-form requests are never limited by it.
   */
  connectPorts?: readonly number[];
  /** 'http' (the default) or 'socks5' (RFC 1928 CONNECT; `credentials` are checked per RFC 1929) */
  protocol?: ProxyProtocol;
  log?: ProxyLog;
}

export interface ProxyStats {
  accepted: number;
  clientSockets: number;
  upstreamSockets: number;
  forwardsInFlight: number;
  forwarded: number;
  tunnels: number;
  authFailures: number;
  badRequests: number;
  forbidden: number;
}

export interface ForwardProxy {
  readonly host: string;
  readonly protocol: ProxyProtocol;
  /** the ports CONNECT may reach, sorted; null = any */
  readonly connectPorts: readonly number[] | null;
  /** the bound port once listening (0 before) */
  readonly port: number;
  listen(): Promise<{ host: string; port: number }>;
  close(): Promise<void>;
  /** client sockets + tunnel upstream sockets + forwarded requests in flight; 0 when idle */
  openSockets(): number;
  stats(): ProxyStats;
  setCredentials(source: CredentialSource): void;
  /** stop answering like a dead VM: listener closed and every open socket destroyed */
  kill(): Promise<void>;
  revive(): Promise<void>;
  hang(on: boolean): void;
  leakForwardedFor(on: boolean): void;
  readonly killed: boolean;
  readonly hanging: boolean;
  readonly leaking: boolean;
}

const noop = () => {};

export function createForwardProxy(opts: ForwardProxyOptions = {}): ForwardProxy {
  const host = opts.host ?? '127.0.0.1';
  const protocol = opts.protocol ?? 'http';
  let port = opts.port ?? 0;
  const log: ProxyLog = opts.log ?? noop;
  let authorize = makeAuthorizer(opts.credentials);
  const clients = new Set<Socket>();
  const upstreams = new Set<Socket>();
  const counters: ProxyCounters = {
    accepted: 0,
    forwardsInFlight: 0,
    forwarded: 0,
    tunnels: 0,
    authFailures: 0,
    badRequests: 0,
    forbidden: 0,
  };
  const connectRule = connectPortRule(opts.connectPorts);
  let hanging = false;
  let leaking = false;
  let killed = false;
  let listener: Server | null = null;
  const agent = new Agent({ keepAlive: true, maxFreeSockets: 64, timeout: 30_000 });
  if (opts.localAddress !== undefined) agent.createConnection = connectionFrom(opts.localAddress);

  const ctx: ProxyContext = {
    connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
    responseTimeoutMs: opts.responseTimeoutMs ?? 60_000,
    idleTimeoutMs: opts.idleTimeoutMs ?? 60_000,
    // node's own default for http servers
    headersTimeoutMs: opts.headersTimeoutMs ?? 60_000,
    agent,
    localAddress: opts.localAddress,
    authorize: (header) => authorize(header),
    connectAllowed: (p) => connectPortAllowed(connectRule, p),
    leaking: () => leaking,
    hanging: () => hanging,
    trackUpstream(socket) {
      upstreams.add(socket);
      socket.once('close', () => upstreams.delete(socket));
    },
    beginForward() {
      counters.forwardsInFlight++;
      counters.forwarded++;
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        counters.forwardsInFlight--;
      };
    },
    log,
  };

  const http = createHttpFront(ctx, counters);

  function onConnection(socket: Socket): void {
    counters.accepted++;
    clients.add(socket);
    socket.once('close', () => clients.delete(socket));
    socket.on('error', noop);
    socket.setTimeout(ctx.idleTimeoutMs);
    socket.on('timeout', () => socket.destroy());
    if (hanging) {
      socket.resume();
      socket.once('end', () => socket.destroy());
      return;
    }
    if (protocol === 'socks5') serveSocks5(ctx, counters, socket);
    else http.emit('connection', socket);
  }

  /** A listen still binding; shutDown waits for it, so that nothing listens once it has returned. */
  let binding: Promise<unknown> = Promise.resolve();

  /** Resolves to the bound address, or null when a shutDown came while it was binding (then closed). */
  function startListening(): Promise<{ host: string; port: number } | null> {
    const server = createNetServer({ allowHalfOpen: true, noDelay: true }, onConnection);
    // Tracked from creation, not from the listen callback: a kill or close during the bind must see it.
    listener = server;
    const bound = new Promise<{ host: string; port: number } | null>((resolve, reject) => {
      server.once('error', (err) => {
        if (listener === server) listener = null;
        reject(err);
      });
      server.listen(port, host, () => {
        server.removeAllListeners('error');
        server.on('error', (err) => log('ERROR', 'proxy listener error', { error: String(err) }));
        const addr = server.address();
        if (addr && typeof addr === 'object') port = addr.port;
        if (listener !== server) {
          // Shut down while binding (the instance was stopped or deleted meanwhile): stay down.
          server.close();
          resolve(null);
          return;
        }
        startHeadTimeouts(http);
        resolve({ host, port });
      });
    });
    binding = bound.catch(() => {});
    return bound;
  }

  async function shutDown(): Promise<void> {
    const server = listener;
    listener = null;
    for (const s of clients) s.destroy();
    for (const s of upstreams) s.destroy();
    agent.destroy();
    // Stops node's head-timeout sweep (a revive starts it again); the front itself never listened.
    http.close();
    await binding;
    if (server?.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  return {
    host,
    protocol,
    connectPorts: connectRule ? [...connectRule].sort((a, b) => a - b) : null,
    get port() {
      return port;
    },
    listen: async () => {
      killed = false;
      const addr = await startListening();
      if (!addr) throw new Error(`the proxy on ${host}:${port} was closed while it started listening`);
      return addr;
    },
    close: shutDown,
    openSockets: () => clients.size + upstreams.size + counters.forwardsInFlight,
    stats: () => ({ clientSockets: clients.size, upstreamSockets: upstreams.size, ...counters }),
    setCredentials(source) {
      authorize = makeAuthorizer(source);
    },
    async kill() {
      killed = true;
      await shutDown();
    },
    async revive() {
      if (listener) return;
      killed = false;
      await startListening();
    },
    hang(on) {
      hanging = on;
      log('WARNING', on ? 'proxy hangs' : 'proxy answers again', { host, port });
    },
    leakForwardedFor(on) {
      leaking = on;
    },
    get killed() {
      return killed;
    },
    get hanging() {
      return hanging;
    },
    get leaking() {
      return leaking;
    },
  };
}
