// Kept-alive connections to upstream proxies for plain HTTP in absolute form (docs/gateway.md § Plain
// HTTP): one keep-alive http.Agent per upstream address and credentials, so Node's own HTTP/1.1 parser
// (llhttp) frames every response (Content-Length, chunked, close-delimited, HEAD/204/304) and a socket
// goes back to the pool only once its response was read to the end and the upstream did not ask to close
// it. A pinned CONNECT tunnel is never pooled: it is bound to the one target it was opened for.
import { Agent, type AgentOptions } from 'node:http';
import net from 'node:net';
import type { SocketCounts } from './sockets.js';

const STALE = new Set(['ECONNRESET', 'EPIPE']);

/**
 * Whether a request that failed on a reused pooled connection, nothing back, may go once more on a fresh
 * one: the upstream closed the connection under us (ECONNRESET, EPIPE), so it never took the request, and
 * a GET or HEAD without a body is safe to send again — in any case: Node sends the method upper-cased, so
 * a "get" is a GET on the wire. Asked only once a request has failed; the caller checks the rest (a reused
 * socket, no body, not retried yet).
 */
export function resendableOnFresh(method: string, code: string | undefined): boolean {
  const m = method.toUpperCase();
  return (m === 'GET' || m === 'HEAD') && code !== undefined && STALE.has(code);
}

export interface UpstreamPoolOptions {
  /**
   * How long an idle upstream connection is kept. Shorter than the upstreams' own keep-alive (squid
   * closes idle client connections after 2 min; a Node server such as proxy-chain after 5 s), so the
   * gateway, not the upstream, is normally the side that closes; a `Keep-Alive: timeout=N` from the
   * upstream shortens it (Node's agent honours the hint). 0 turns keep-alive off.
   */
  idleMs: number;
  /**
   * Idle connections kept per upstream address and credentials; more are closed when their response ends.
   * 0 keeps none: keep-alive is off, as with `idleMs` 0 (Node's agent would read a maxFreeSockets of 0 as
   * its default, 256).
   */
  maxIdlePerUpstream: number;
}

/** A request through a pool after destroy(): it fails as a dial that never connected. */
export class UpstreamPoolClosedError extends Error {
  readonly kind = 'upstream_pool_closed';
}

/** An agent that counts the sockets it opens in gateway_open_sockets{kind="upstreams"}. */
class CountingAgent extends Agent {
  constructor(
    opts: AgentOptions,
    // Not `sockets`: that is the Agent's own map of busy sockets.
    private readonly counts: SocketCounts,
    private readonly pool: { readonly closed: boolean },
  ) {
    super(opts);
  }

  override createConnection(
    options: net.NetConnectOpts,
    callback?: (err: Error | null, socket: net.Socket) => void,
  ): net.Socket | null {
    // destroy() is the drain's cut: the last report, "nothing in flight", follows, and the proxies go to
    // other workers. A request sent after it (a GET retried on `fresh` once its pooled connection was cut,
    // an agent made anew for a redial) would go out through a proxy no longer this worker's.
    if (this.pool.closed) {
      // With an error Node's agent reads no socket (the request fails with it, as a dial refused).
      const refuse = callback as ((err: Error) => void) | undefined;
      refuse?.(new UpstreamPoolClosedError('upstream pool destroyed: the gateway is shutting down'));
      return null;
    }
    const s = net.createConnection(options);
    // The request head leaves in one write; Nagle would only delay a body's last small segment.
    s.setNoDelay(true);
    this.counts.upstreams++;
    s.once('close', () => this.counts.upstreams--);
    return s;
  }
}

export class UpstreamPool {
  private readonly agents = new Map<string, Agent>();
  /** For one request that must not ride a pooled socket (the retry after a stale one). */
  readonly fresh: Agent;
  private isClosed = false;

  constructor(
    private readonly sockets: SocketCounts,
    private readonly opts: UpstreamPoolOptions,
  ) {
    this.fresh = new CountingAgent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY }, sockets, this);
  }

  /** Set by destroy(): every agent of the pool refuses to connect from then on. */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * The agent of one upstream address and the credentials sent to it (`authorization`, the
   * Proxy-Authorization value, "" for none). Many snapshot entries may name the same proxy: those with the
   * same credentials share connections, others never do. The credentials travel on every request, but an
   * upstream may bind what it does to the connection — authenticate only its first request, pin a sticky
   * session's exit address to it — and a request riding a connection opened for other credentials would
   * then be billed, routed or sent out as theirs.
   */
  agentFor(host: string, port: number, authorization: string): Agent {
    // One that refuses (above), not a new agent kept in a pool already destroyed.
    if (this.closed) return this.fresh;
    const key = `${host}|${port}|${authorization}`;
    let a = this.agents.get(key);
    if (!a) {
      // Both bounds must allow an idle connection: Node's agent takes a maxFreeSockets of 0 for its default (256).
      const keepAlive = this.opts.idleMs > 0 && this.opts.maxIdlePerUpstream > 0;
      a = new CountingAgent(
        {
          keepAlive,
          // The free socket used last is the one least likely to have been closed by the upstream.
          scheduling: 'lifo',
          maxFreeSockets: this.opts.maxIdlePerUpstream,
          maxSockets: Number.POSITIVE_INFINITY,
          ...(keepAlive ? { timeout: this.opts.idleMs } : {}),
        },
        this.sockets,
        this,
      );
      this.agents.set(key, a);
    }
    return a;
  }

  /** Closes the idle connections of one upstream address, whatever their credentials (suspected stale). */
  dropIdle(host: string, port: number): void {
    const address = `${host}|${port}|`;
    for (const [key, a] of this.agents) {
      if (!key.startsWith(address)) continue;
      for (const list of Object.values(a.freeSockets)) for (const s of list ?? []) s.destroy();
    }
  }

  /** Forgets agents with no socket at all (upstreams that left the snapshot and went idle). */
  prune(): void {
    for (const [key, a] of this.agents) {
      const busy = (m: NodeJS.ReadOnlyDict<unknown[]>) => Object.values(m).some((l) => (l?.length ?? 0) > 0);
      if (!busy(a.sockets) && !busy(a.freeSockets) && !busy(a.requests)) this.agents.delete(key);
    }
  }

  /** Idle connections open now, over every upstream (for tests and /healthz). */
  idleCount(): number {
    let n = 0;
    for (const a of this.agents.values())
      for (const list of Object.values(a.freeSockets)) n += list?.length ?? 0;
    return n;
  }

  destroy(): void {
    this.isClosed = true;
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
    this.fresh.destroy();
  }
}
