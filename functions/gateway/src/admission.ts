// Whether a proxy-listener request is let in, decided from its parsed head before any socket work: a
// head at all, a known client (Proxy-Authorization: Basic), a worker that accepts requests (a fresh
// snapshot, not shutting down), and a target the listener serves (request-target.ts). It returns plain
// facts, so the order of the refusals (400 → 407 → 503 → the target's own) is unit-tested apart from
// sockets; the session copies them into its own fields (proxy-session.ts).
import { refusalCode } from '../../../shared/src/domain/gateway/staleness.js';
import type { ClientAuth } from './client-auth.js';
import { header, type RequestHead } from './head.js';
import { requestTarget } from './request-target.js';
import type { GatewayWorker } from './worker.js';

/** A request let in: who sent it and where it goes (path, Host header and body only for plain HTTP). */
export interface Admitted {
  readonly ok: true;
  readonly user: string;
  readonly connect: boolean;
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly hostHeader: string;
  readonly bodyLength: number;
}

export interface Refused {
  readonly ok: false;
  readonly status: number;
  readonly code: string;
}

export type Admission = Admitted | Refused;

/** What admission reads of the listener's context (ProxyContext has both). */
export interface AdmissionGate {
  readonly auth: Pick<ClientAuth, 'basic'>;
  readonly worker: Pick<GatewayWorker, 'accepting' | 'phase'>;
}

export function admit(h: RequestHead | null, gate: AdmissionGate): Admission {
  if (!h) return { ok: false, status: 400, code: 'bad_request' };
  const user = gate.auth.basic(header(h, 'proxy-authorization'));
  if (user === null) return { ok: false, status: 407, code: 'proxy_auth_required' };
  if (!gate.worker.accepting)
    return { ok: false, status: 503, code: refusalCode(gate.worker.phase()) ?? 'not_accepting' };
  const t = requestTarget(h);
  if (t.kind === 'refuse') return { ok: false, status: t.status, code: t.code };
  const { host, port } = t.authority;
  if (t.kind === 'connect')
    return { ok: true, user, connect: true, host, port, path: '', hostHeader: '', bodyLength: 0 };
  return {
    ok: true,
    user,
    connect: false,
    host,
    port,
    path: t.path,
    hostHeader: t.hostHeader,
    bodyLength: t.bodyLength,
  };
}
