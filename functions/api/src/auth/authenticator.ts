// Who may call the admin API. An Authenticator turns the Authorization header into a principal or a
// refusal; the middleware maps refusals to 401 / 403 / 503. Implementations: static named tokens, Google
// identity tokens on an email allow-list, and "open" (explicit local mode only).
import { BEARER_TOKEN } from '../../../../shared/src/domain/bearer-token.js';

export type Principal =
  | { kind: 'google'; email: string }
  | { kind: 'token'; name: string }
  | { kind: 'local' };

export type AuthOutcome =
  | { ok: true; principal: Principal }
  /** unauthenticated: no usable credential (401). forbidden: a valid identity that is not allowed (403).
   *  unavailable: the credential could not be checked right now, e.g. Google's certs unreachable (503). */
  | { ok: false; code: 'unauthenticated' | 'forbidden' | 'unavailable'; reason: string };

export interface Authenticator {
  /** What /healthz and the start-up log report, e.g. "tokens(2)+google(1 emails)". */
  readonly description: string;
  authenticate(bearerToken: string | undefined): Promise<AuthOutcome>;
}

/** A misconfiguration found at start: the service refuses to start rather than run half-protected. */
export class AuthConfigError extends Error {
  readonly kind = 'config';
}

/** Tokens longer than this are refused unread (Google ID tokens are ~1 KB). */
export const MAX_TOKEN_LENGTH = 8192;

/** The bearer token of an Authorization header (RFC 6750 §2.1), or undefined. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const match = authorization?.match(/^Bearer +(\S+) *$/i)?.[1];
  return match !== undefined && BEARER_TOKEN.test(match) ? match : undefined;
}

/** Auth off: every caller is the local operator. Only built when local mode is explicit (see config.ts). */
export const openAuthenticator = (): Authenticator => ({
  description: 'off (local mode)',
  authenticate: async () => ({ ok: true, principal: { kind: 'local' } }),
});

/** Tries each authenticator in turn; the first that recognises the token decides. */
export function anyOf(
  authenticators: Array<Authenticator & { recognises(token: string): boolean }>,
): Authenticator {
  return {
    description: authenticators.map((a) => a.description).join('+'),
    async authenticate(token) {
      if (!token) return { ok: false, code: 'unauthenticated', reason: 'missing bearer token' };
      if (token.length > MAX_TOKEN_LENGTH)
        return { ok: false, code: 'unauthenticated', reason: 'token too long' };
      for (const a of authenticators) {
        if (a.recognises(token)) {
          const outcome = await a.authenticate(token);
          if (outcome.ok || outcome.code !== 'unauthenticated') return outcome;
        }
      }
      return { ok: false, code: 'unauthenticated', reason: 'invalid credential' };
    },
  };
}
