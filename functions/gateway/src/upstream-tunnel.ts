// A CONNECT tunnel through an upstream proxy as a promise, for the fetch endpoint (the proxy listener
// runs the same handshake inline in its state machine, without promises, on its hot path).
import net, { type Socket } from 'node:net';
import type { Upstream } from '../../../shared/src/domain/gateway/routing.js';
import type { UpstreamAuth } from './compile.js';
import { HEAD_END, statusOf } from './head.js';
import type { OutcomeStage } from './outcomes.js';
import type { SocketCounts } from './sockets.js';

export type TunnelFailure =
  | 'dial_failed'
  | 'handshake_failed'
  | 'refused'
  | 'auth_failed'
  | 'timeout'
  | 'closed';

/** The client's stable code for a tunnel failure, on the proxy listener and on /v1/fetch alike. */
export const upstreamCode = (kind: TunnelFailure) => `upstream_${kind}` as const;

/**
 * How long an upstream's answer to CONNECT may grow without its blank line. Past it the answer is one
 * the gateway cannot read: `upstream_handshake_failed` on both paths (docs/gateway.md § Error codes),
 * as an answer that is not the protocol's is.
 */
export const MAX_CONNECT_ANSWER_HEAD = 16 * 1024;
export const UNREADABLE_CONNECT_ANSWER: TunnelFailure = 'handshake_failed';

/**
 * The stage a failed handshake is reported at to the passive health track. An upstream that answered the
 * CONNECT with a refusal (a status other than 200 or 407; a SOCKS5 reply ≠ 0x00) did its part: it could
 * not or would not reach the target — squid's 502/503/504 for a target down, its 403 for a port its rules
 * refuse — which says something about the target, not that the proxy is broken. So it is as ambiguous as
 * a target's failed answer (RESPONSE_HEADERS: the proxy's fault only when it had no success at all), where
 * a DIAL or PROXY_HANDSHAKE failure always is; otherwise any client could fail a proxy by asking it for a
 * closed port or a dead host. So is a CONNECT that got not one byte of an answer before the gateway's
 * deadline (`answerAwaited`): an http upstream's, sent as soon as its connection was up, and a SOCKS5
 * upstream's, sent once it had answered the greeting (and accepted the credentials) — both answer only
 * once they have reached the target, and squid gives a target that drops SYNs a minute (its
 * connect_timeout), past the gateway's 10 s; a proxy that answers nobody still has no success at all.
 * Credentials refused (407, SOCKS5 auth), an answer that is not the protocol's, a SOCKS5 upstream silent
 * before its greeting or credentials were answered, an answer begun and never finished, or a connection
 * closed without an answer stay PROXY_HANDSHAKE.
 */
export const evidenceStage = (
  kind: TunnelFailure,
  stage: OutcomeStage,
  answerAwaited = false,
): OutcomeStage =>
  kind === 'refused' || (kind === 'timeout' && stage === 'PROXY_HANDSHAKE' && answerAwaited)
    ? 'RESPONSE_HEADERS'
    : stage;

export class TunnelError extends Error {
  constructor(
    readonly kind: TunnelFailure,
    readonly stage: OutcomeStage,
    readonly upstreamStatus?: number,
    options?: { cause?: unknown; socksReply?: number; answerAwaited?: boolean },
  ) {
    super(`upstream tunnel ${kind} at ${stage}`, options);
    this.socksReply = options?.socksReply;
    this.answerAwaited = options?.answerAwaited ?? false;
  }

  /**
   * The CONNECT was sent and not one byte of its answer had come when the deadline came (evidenceStage):
   * an http upstream's, or a SOCKS5 upstream's once its method choice and credentials were answered.
   */
  readonly answerAwaited: boolean;

  /** A SOCKS5 upstream's non-zero CONNECT reply (RFC 1928 §6 REP), where an http one has a status. */
  readonly socksReply: number | undefined;
}

/**
 * The client's answer to a tunnel that failed, whichever protocol the upstream speaks: 504 when it timed
 * out, else 502, with the stable code `upstream_<kind>` and what the upstream answered, if anything (an
 * http upstream's status, a SOCKS5 upstream's reply code).
 */
export function tunnelRefusal(e: TunnelError): {
  status: number;
  code: string;
  detail: Record<string, number> | undefined;
} {
  const detail: Record<string, number> | undefined =
    e.upstreamStatus !== undefined
      ? { upstreamStatus: e.upstreamStatus }
      : e.socksReply !== undefined
        ? { socksReply: e.socksReply }
        : undefined;
  return { status: e.kind === 'timeout' ? 504 : 502, code: upstreamCode(e.kind), detail };
}

/** TCP to the upstream for the fetch endpoint, counted in `sockets` until it closes. */
export function dialCounted(u: Upstream<UpstreamAuth>, sockets: SocketCounts): Socket {
  const up = net.connect({ host: u.host, port: u.port, noDelay: true });
  sockets.upstreams++;
  up.once('close', () => sockets.upstreams--);
  return up;
}

/**
 * Resolves with a socket whose next bytes come from the target (CONNECT answered 200). `timeoutMs` bounds
 * the dial and the whole handshake: a deadline, not an idle timer (one re-armed on every byte let an
 * upstream dripping its answer hold the fetch, and its slot, for as long as it liked).
 */
export function openTunnel(
  u: Upstream<UpstreamAuth>,
  pinnedAuthority: string,
  timeoutMs: number,
  sockets: SocketCounts,
  /** Given the socket as soon as it is dialled: destroying it (with an error) rejects at once. */
  dialled?: (s: Socket) => void,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const up = dialCounted(u, sockets);
    dialled?.(up);
    const timer = setTimeout(() => fail('timeout'), timeoutMs);
    let stage: OutcomeStage = 'DIAL';
    let buf: Buffer | null = null;
    const fail = (kind: TunnelError['kind'], status?: number, cause?: unknown) => {
      clearTimeout(timer);
      up.destroy();
      // Not one byte of an answer yet: the upstream may still be reaching the target (evidenceStage).
      const answerAwaited = stage === 'PROXY_HANDSHAKE' && buf === null;
      reject(new TunnelError(kind, stage, status, { cause, answerAwaited }));
    };
    const onData = (chunk: Buffer) => {
      buf = buf ? Buffer.concat([buf, chunk]) : chunk;
      const end = buf.indexOf(HEAD_END);
      if (end < 0) {
        if (buf.length > MAX_CONNECT_ANSWER_HEAD) fail(UNREADABLE_CONNECT_ANSWER);
        return;
      }
      const status = statusOf(buf);
      if (status !== 200) return fail(status === 407 ? 'auth_failed' : 'refused', status);
      up.removeListener('data', onData);
      up.removeListener('error', onError);
      up.removeListener('close', onClose);
      clearTimeout(timer);
      up.pause();
      if (end + 4 < buf.length) up.unshift(buf.subarray(end + 4));
      resolve(up);
    };
    // Reset after the connection was made: the upstream went away before answering, `closed` as a FIN
    // is (and as the proxy listener and the SOCKS5 path answer it).
    const onError = (err: Error) => fail(stage === 'DIAL' ? 'dial_failed' : 'closed', undefined, err);
    const onClose = () => fail('closed');
    up.on('error', onError);
    up.on('close', onClose);
    up.on('data', onData);
    up.once('connect', () => {
      stage = 'PROXY_HANDSHAKE';
      up.write(
        `CONNECT ${pinnedAuthority} HTTP/1.1\r\nHost: ${pinnedAuthority}\r\n${u.auth.line}\r\n`,
        'latin1',
      );
    });
  });
}
