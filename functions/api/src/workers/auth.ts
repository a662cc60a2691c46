// Who may speak for a worker (contract §8, mapped: Google-signed identity tokens instead of mTLS). A
// credential becomes a principal that knows which worker ids it is authorised for; every route then checks
// that the worker id it acts on is one of them. Static worker tokens are compared in constant time over
// sha256 digests; Google identity tokens go through the API's own verifier (google-auth-library).
import { createHash, timingSafeEqual } from 'node:crypto';
import { type AuthOutcome, MAX_TOKEN_LENGTH } from '../auth/authenticator.js';
import type { IdTokenVerifier } from '../auth/id-token-verifier.js';
import { globMatches, type ServiceAccountGrant, type WorkerToken } from './config.js';

export interface WorkerPrincipal {
  /** Recorded on the session and in logs: never the credential itself. */
  label: string;
  /** Worker auth is off (local mode): nothing was checked. */
  open?: true;
  may(workerId: string): boolean;
}

export type WorkerAuthOutcome =
  | { ok: true; principal: WorkerPrincipal }
  | Extract<AuthOutcome, { ok: false }>;

export interface WorkerAuthenticator {
  readonly description: string;
  authenticate(bearer: string | undefined): Promise<WorkerAuthOutcome>;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
const looksLikeJwt = (t: string) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(t);

export interface WorkerAuthOptions {
  tokens: WorkerToken[];
  serviceAccounts: ServiceAccountGrant[];
  verifier: IdTokenVerifier | null;
  open: boolean;
}

export function workerAuthenticator(o: WorkerAuthOptions): WorkerAuthenticator {
  const known = o.tokens.map((t) => ({ workerId: t.workerId, digest: digest(t.token) }));
  const description = o.open
    ? 'off (local mode)'
    : `worker-tokens(${known.length})+service-accounts(${o.serviceAccounts.length})`;
  return {
    description,
    async authenticate(bearer) {
      if (o.open) return { ok: true, principal: { label: 'local', open: true, may: () => true } };
      if (!bearer) return { ok: false, code: 'unauthenticated', reason: 'missing bearer token' };
      if (bearer.length > MAX_TOKEN_LENGTH)
        return { ok: false, code: 'unauthenticated', reason: 'token too long' };
      const presented = digest(bearer);
      let match: string | undefined;
      for (const k of known) if (timingSafeEqual(presented, k.digest)) match ??= k.workerId;
      if (match !== undefined) {
        const id = match;
        return { ok: true, principal: { label: `token:${id}`, may: (w) => w === id } };
      }
      if (!o.verifier || o.serviceAccounts.length === 0 || !looksLikeJwt(bearer)) {
        return { ok: false, code: 'unauthenticated', reason: 'invalid credential' };
      }
      const result = await o.verifier.verify(bearer);
      if (!result.ok) {
        return result.kind === 'unavailable'
          ? { ok: false, code: 'unavailable', reason: 'cannot fetch Google signing certificates' }
          : { ok: false, code: 'unauthenticated', reason: 'invalid identity token' };
      }
      const email = result.claims.email?.toLowerCase();
      if (!email || !result.claims.emailVerified) {
        return { ok: false, code: 'forbidden', reason: 'the token carries no verified email' };
      }
      const grants = o.serviceAccounts.filter((g) => g.email === email);
      if (grants.length === 0)
        return { ok: false, code: 'forbidden', reason: `${email} is not a gateway identity` };
      return {
        ok: true,
        principal: { label: `sa:${email}`, may: (w) => grants.some((g) => globMatches(g.pattern, w)) },
      };
    },
  };
}
