// What the per-request handlers need from the proxy that owns them: settings, fault switches and the
// bookkeeping that lets `openSockets()` prove nothing leaks.
import type { Agent } from 'node:http';
import type { Socket } from 'node:net';

export interface ProxyTimeouts {
  /** TCP connect to the target (CONNECT and absolute-form); on expiry 504. */
  connectTimeoutMs: number;
  /** From sending a forwarded request to its response head; on expiry 504. */
  responseTimeoutMs: number;
  /** Inactivity on any client or upstream socket (an idle tunnel, a silent client); then closed. */
  idleTimeoutMs: number;
  /** From a request's first byte to the end of its head, however it trickles in (slowloris); on expiry 408. */
  headersTimeoutMs: number;
}

export interface ProxyContext extends ProxyTimeouts {
  agent: Agent;
  /** source address of connections to IPv4 loopback targets (a VM egresses from its own IP); undefined = any */
  localAddress: string | undefined;
  authorize(header: string | undefined): boolean | Promise<boolean>;
  /** May a CONNECT (HTTP or SOCKS5) reach this port? squid's `deny CONNECT !SSL_ports`. */
  connectAllowed(port: number): boolean;
  /** leak fault: add X-Forwarded-For and Via to forwarded requests */
  leaking(): boolean;
  /** hang fault: accept but never answer */
  hanging(): boolean;
  /** register an upstream socket of a tunnel until it closes */
  trackUpstream(socket: Socket): void;
  /** count a forwarded request until its exchange ends, whichever way */
  beginForward(): () => void;
  log(severity: 'DEBUG' | 'WARNING' | 'ERROR', message: string, fields?: Record<string, unknown>): void;
}

export interface ProxyCounters {
  /** Client connections accepted since start (a client that keeps its connection alive counts once). */
  accepted: number;
  forwardsInFlight: number;
  forwarded: number;
  tunnels: number;
  authFailures: number;
  badRequests: number;
  /** CONNECTs refused for their port (403, or SOCKS5 reply 2). */
  forbidden: number;
}
