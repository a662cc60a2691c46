// The SOCKS5 handshake with an upstream (RFC 1928 CONNECT, RFC 1929 credentials), run by the `socks`
// package on a socket we connected ourselves — so a TCP failure to reach the upstream is stage DIAL and
// everything after the connection is PROXY_HANDSHAKE, exactly as for an http upstream (a refusal, or a
// timeout while only the CONNECT's reply was missing, then reported as RESPONSE_HEADERS: evidenceStage in
// upstream-tunnel.ts). The target is the address the SSRF guard checked (ATYP 0x01/0x04), never the
// name: what the guard decided is what the upstream dials (docs/gateway.md § SOCKS5 upstreams).
import type { Socket } from 'node:net';
import { SocksClient } from 'socks';
import type { Upstream } from '../../../shared/src/domain/gateway/routing.js';
import { awaitingConnectReply, grantedReplyReadable } from '../../../shared/src/domain/socks5-answer.js';
import type { UpstreamAuth } from './compile.js';
import type { UpstreamCredentials } from './credentials.js';
import type { SocketCounts } from './sockets.js';
import { socks5Failure } from './socks5-failure.js';
import { dialCounted, TunnelError } from './upstream-tunnel.js';

export interface Socks5Hop {
  host: string;
  port: number;
  credentials: UpstreamCredentials | null;
}

/**
 * The package's own `error` listener is gone once its handshake ends (either way): an `error` event
 * with no listener would throw, and the fetch endpoint learns of failures from the TLS socket or the
 * request riding the tunnel instead.
 */
const ignore = (): void => {};

/**
 * Resolves once the upstream granted the CONNECT: the socket is paused, and any target bytes that came
 * with the reply are back at the front of its read buffer. Rejects with a TunnelError at
 * PROXY_HANDSHAKE (the socket destroyed): `timeout` (with `answerAwaited` when only the CONNECT's reply
 * was missing), or what socks5Failure read from the upstream's answers. `timeoutMs` is the one deadline
 * of the handshake: the proxy listener's sweep leaves it to this timer, which knows how far it got.
 */
export function socks5Handshake(
  up: Socket,
  hop: Socks5Hop,
  address: string,
  port: number,
  timeoutMs: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    // Everything the upstream sends, for socks5Failure: the package reports failures as text only.
    let seen: Buffer[] = [];
    // What we had written when its last bytes came: listened to before the package is, so anything
    // written past it is the package's next step, sent on reading them (the CONNECT, once consented to).
    let writtenAtAnswer = 0;
    const tap = (b: Buffer) => {
      seen.push(b);
      writtenAtAnswer = up.bytesWritten;
    };
    up.on('data', tap);
    const fail = (e: TunnelError) => {
      clearTimeout(timer);
      up.removeListener('data', tap);
      // Rejected before the socket is destroyed: the caller's handler (a microtask) runs before the
      // socket's 'close', so the caller answers with this error, not with "closed".
      reject(e);
      up.destroy();
    };
    // Timed out with the method choice (and the credentials) answered, the CONNECT sent after them and
    // not one byte of its reply in: the upstream is reaching the target (its reply comes once it has
    // connected), a blackholed one perhaps — `answerAwaited`, as for an http upstream's unanswered CONNECT
    // (evidenceStage). Silent before that, or stalled mid-reply, the proxy itself is what hangs.
    const timer = setTimeout(() => {
      const answerAwaited = awaitingConnectReply(seen) && up.bytesWritten > writtenAtAnswer;
      fail(new TunnelError('timeout', 'PROXY_HANDSHAKE', undefined, { answerAwaited }));
    }, timeoutMs);
    const c = hop.credentials;
    SocksClient.createConnection({
      proxy: {
        host: hop.host,
        port: hop.port,
        type: 5,
        ...(c ? { userId: c.username, password: c.password } : {}),
      },
      command: 'connect',
      destination: { host: address, port },
      // Ours above ends the handshake; the package's own timer is only a backstop.
      timeout: timeoutMs + 1000,
      existing_socket: up,
    }).then(
      () => {
        if (!grantedReplyReadable(seen)) {
          fail(new TunnelError('handshake_failed', 'PROXY_HANDSHAKE'));
          return;
        }
        clearTimeout(timer);
        // The package has paused the socket; on its next turn it re-emits what it had read past its
        // reply and resumes the socket. What the tap holds now is the handshake plus that same excess:
        // dropped, and the tap collects from here until our turn, queued after the package's.
        seen = [];
        setImmediate(() => {
          up.removeListener('data', tap);
          if (up.destroyed) {
            reject(new TunnelError('closed', 'PROXY_HANDSHAKE'));
            return;
          }
          up.pause();
          if (seen.length > 0) up.unshift(Buffer.concat(seen));
          resolve();
        });
      },
      (err: unknown) => {
        // After a timeout the promise is settled already; this is the package noticing the destroy.
        const f = socks5Failure(Buffer.concat(seen));
        // The package's SocksClientError carries its `options`, the upstream's password among them:
        // only its message goes on, so nothing that logs or serializes causes can print the password.
        const cause = new Error(err instanceof Error ? err.message : String(err));
        fail(
          new TunnelError(f.kind, 'PROXY_HANDSHAKE', undefined, {
            cause,
            ...(f.kind === 'refused' ? { socksReply: f.reply } : {}),
          }),
        );
      },
    );
  });
}

/**
 * For the fetch endpoint: TCP to a SOCKS5 upstream, then its handshake to address:port. Resolves with
 * the socket paused, its next bytes the target's (as openTunnel does for an http upstream).
 */
export function openSocks5Tunnel(
  u: Upstream<UpstreamAuth>,
  address: string,
  port: number,
  timeoutMs: number,
  sockets: SocketCounts,
  /** Given the socket as soon as it is dialled: destroying it (with an error) rejects. */
  dialled?: (s: Socket) => void,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const up = dialCounted(u, sockets);
    dialled?.(up);
    // One bound for the dial and the handshake together, as for an http upstream's CONNECT. Monotonic: a
    // wall clock stepped forward meanwhile left the handshake 1 ms, a failure recorded against the proxy.
    const until = performance.now() + timeoutMs;
    const dialTimer = setTimeout(() => {
      up.destroy();
      reject(new TunnelError('timeout', 'DIAL'));
    }, timeoutMs);
    const onDialError = (err: Error) => {
      clearTimeout(dialTimer);
      reject(new TunnelError('dial_failed', 'DIAL', undefined, { cause: err }));
    };
    up.once('error', onDialError);
    // once: the package emits 'connect' again on a socket handed to it.
    up.once('connect', () => {
      clearTimeout(dialTimer);
      up.removeListener('error', onDialError);
      up.on('error', ignore);
      const hop = { host: u.host, port: u.port, credentials: u.auth.socks5?.credentials ?? null };
      socks5Handshake(up, hop, address, port, Math.max(1, until - performance.now())).then(
        () => resolve(up),
        reject,
      );
    });
  });
}
