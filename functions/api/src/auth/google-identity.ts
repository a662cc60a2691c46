// Google identity tokens on an email allow-list: `curl -H "Authorization: Bearer $(gcloud auth
// print-identity-token)"` for people, metadata-server tokens for service accounts. A valid token whose
// email is unverified or not on the list is 403 (we know who it is; they may not), anything else 401.
import type { Authenticator } from './authenticator.js';
import type { IdTokenVerifier } from './id-token-verifier.js';

export interface GoogleIdentityOptions {
  verifier: IdTokenVerifier;
  /** Compared case-insensitively (email local parts are case-insensitive at Google). */
  allowedEmails: string[];
}

/** A JWS compact serialisation: three base64url segments. Anything else cannot be a Google ID token. */
const looksLikeJwt = (token: string) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);

export function googleIdentityAuthenticator({ verifier, allowedEmails }: GoogleIdentityOptions) {
  const allowed = new Set(allowedEmails.map((e) => e.trim().toLowerCase()));
  return {
    description: `google(${allowed.size} emails)`,
    recognises: looksLikeJwt,
    async authenticate(token: string | undefined) {
      if (!token || !looksLikeJwt(token)) {
        return { ok: false, code: 'unauthenticated', reason: 'not an identity token' } as const;
      }
      const result = await verifier.verify(token);
      if (!result.ok) {
        return result.kind === 'unavailable'
          ? ({ ok: false, code: 'unavailable', reason: 'cannot fetch Google signing certificates' } as const)
          : ({ ok: false, code: 'unauthenticated', reason: 'invalid identity token' } as const);
      }
      const email = result.claims.email?.toLowerCase();
      if (!email || !result.claims.emailVerified) {
        return { ok: false, code: 'forbidden', reason: 'the token carries no verified email' } as const;
      }
      if (!allowed.has(email))
        return { ok: false, code: 'forbidden', reason: `${email} is not an admin` } as const;
      return { ok: true, principal: { kind: 'google', email } } as const;
    },
  } satisfies Authenticator & { recognises(token: string): boolean };
}
