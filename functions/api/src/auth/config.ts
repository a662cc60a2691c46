// Admin auth from the environment (read by main.ts only):
//   ADMIN_EMAILS     comma-separated Google identities allowed to administer (needs ADMIN_AUDIENCES)
//   ADMIN_AUDIENCES  comma-separated accepted `aud` values: the service URL, and/or GCLOUD_CLI_AUDIENCE
//   ADMIN_TOKENS     "name:token,…" static admin tokens (local plane, CI, break-glass)
//   PROXYPLANE_LOCAL "1" allows running with none of the above: auth OFF, announced loudly at start.
// Anything else with no credential configured refuses to start: an open admin API must be a decision.
import { AuthConfigError, type Authenticator, anyOf, openAuthenticator } from './authenticator.js';
import { googleIdentityAuthenticator } from './google-identity.js';
import { GoogleIdTokenVerifier, type IdTokenVerifier } from './id-token-verifier.js';
import { type NamedToken, parseAdminTokens, staticTokenAuthenticator } from './static-tokens.js';

export type AuthConfig =
  | { mode: 'open' }
  | { mode: 'enforced'; tokens: NamedToken[]; google: { emails: string[]; audiences: string[] } | null };

const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

export function loadAuthConfig(env: Record<string, string | undefined>): AuthConfig {
  const tokens = parseAdminTokens(env.ADMIN_TOKENS ?? '');
  const emails = list(env.ADMIN_EMAILS);
  const audiences = list(env.ADMIN_AUDIENCES);
  const bad = emails.find((e) => !/^[^@\s]+@[^@\s]+$/.test(e));
  if (bad !== undefined) throw new AuthConfigError(`ADMIN_EMAILS: "${bad}" is not an email address`);
  if (emails.length > 0 && audiences.length === 0) {
    throw new AuthConfigError('ADMIN_EMAILS is set but ADMIN_AUDIENCES is empty: set it to the service URL');
  }
  if (tokens.length === 0 && emails.length === 0) {
    if (env.PROXYPLANE_LOCAL === '1') return { mode: 'open' };
    throw new AuthConfigError(
      'no admin credential configured (ADMIN_EMAILS or ADMIN_TOKENS); set PROXYPLANE_LOCAL=1 to run with auth off locally',
    );
  }
  return { mode: 'enforced', tokens, google: emails.length > 0 ? { emails, audiences } : null };
}

export interface BuildAuthOptions {
  /** Replaces the real verifier (tests); otherwise a GoogleIdTokenVerifier for the configured audiences. */
  verifier?: IdTokenVerifier;
  certsUrl?: string;
}

export function buildAuthenticator(config: AuthConfig, options: BuildAuthOptions = {}): Authenticator {
  if (config.mode === 'open') return openAuthenticator();
  const parts = [];
  if (config.tokens.length > 0) parts.push(staticTokenAuthenticator(config.tokens));
  if (config.google) {
    const verifier =
      options.verifier ??
      new GoogleIdTokenVerifier({ audiences: config.google.audiences, certsUrl: options.certsUrl });
    parts.push(googleIdentityAuthenticator({ verifier, allowedEmails: config.google.emails }));
  }
  return anyOf(parts);
}
