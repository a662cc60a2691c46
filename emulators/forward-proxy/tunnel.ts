// Tunnels: CONNECT (RFC 9110 §9.3.6) and SOCKS5 CONNECT (RFC 1928 §4): once the proxy has answered it
// only copies bytes. Both sockets allow half-open, so a client that shuts down its write side still
// reads the reply: its FIN is passed on to the target and the target's FIN back, and each socket closes
// once both of its directions are done.
import { connect, type Socket } from 'node:net';
import type { ProxyContext } from './context.js';
import { type Route, routeTo } from './dial.js';
import { refuse } from './responses.js';
import type { Target } from './target.js';

const ESTABLISHED = 'HTTP/1.1 200 Connection Established\r\n\r\n';

/** How the client is told the tunnel's fate: in HTTP (CONNECT) or in SOCKS5 replies. */
export interface TunnelAnswer {
  established(client: Socket, upstream: Socket): void;
  /** `status` is what an HTTP proxy answers (502 unreachable, 504 timed out); `code` the socket error's. */
  failed(client: Socket, status: 502 | 504, code: string | undefined): void;
}

export const httpAnswer: TunnelAnswer = {
  established: (client) => void client.write(ESTABLISHED),
  failed: (client, status) => refuse(client, status),
};

function unreachable(ctx: ProxyContext, target: Target, err: NodeJS.ErrnoException): void {
  ctx.log('DEBUG', 'tunnel target unreachable', { target: `${target.host}:${target.port}`, code: err.code });
}

export function openTunnel(
  ctx: ProxyContext,
  client: Socket,
  head: Buffer,
  target: Target,
  answer: TunnelAnswer = httpAnswer,
): void {
  // The look-up a VM's own address needs (dial.ts) comes before any socket, so before the connect's
  // timeout: bounded by the same time, or a silent resolver held the client for its own retries.
  let late = false;
  const lookupTimer = setTimeout(() => {
    late = true;
    answer.failed(client, 504, 'ETIMEDOUT');
  }, ctx.connectTimeoutMs);
  const onClientGone = () => clearTimeout(lookupTimer);
  client.once('close', onClientGone);
  routeTo(target.host, ctx.localAddress, (err, route) => {
    clearTimeout(lookupTimer);
    client.off('close', onClientGone);
    if (late || client.destroyed) return;
    if (!err) return tunnel(ctx, client, head, target, answer, route);
    unreachable(ctx, target, err);
    answer.failed(client, 502, err.code);
  });
}

function tunnel(
  ctx: ProxyContext,
  client: Socket,
  head: Buffer,
  target: Target,
  answer: TunnelAnswer,
  route: Route,
): void {
  const upstream = connect({
    host: target.host,
    port: target.port,
    ...route,
    allowHalfOpen: true,
    noDelay: true,
  });
  ctx.trackUpstream(upstream);
  let established = false;

  upstream.setTimeout(ctx.connectTimeoutMs);
  const fail = (status: 502 | 504, code?: string) => {
    upstream.destroy();
    answer.failed(client, status, code);
  };
  // A fully closed client can take no more bytes: drop the target at once.
  const onClientClose = () => upstream.destroy();
  client.once('close', onClientClose);
  client.on('error', () => upstream.destroy());

  upstream.once('connect', () => {
    established = true;
    upstream.setTimeout(ctx.idleTimeoutMs);
    client.setTimeout(ctx.idleTimeoutMs);
    answer.established(client, upstream);
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  upstream.on('timeout', () => (established ? destroyBoth() : fail(504)));
  upstream.on('error', (err: NodeJS.ErrnoException) => {
    if (established) return destroyBoth();
    unreachable(ctx, target, err);
    fail(err.code === 'ETIMEDOUT' ? 504 : 502, err.code);
  });
  // The target is gone: let what it sent drain to the client, then close the client too.
  upstream.once('close', () => {
    if (!established || client.destroyed) return;
    client.end();
    if (client.writableFinished) client.destroy();
    else client.once('finish', () => client.destroy());
  });
  function destroyBoth(): void {
    upstream.destroy();
    client.destroy();
  }
}
