// Admin auth from the environment (read by main.ts only):
//   ADMIN_PRINCIPALS "user:a@b.c,serviceAccount:x@p.iam.gserviceaccount.com,domain:example.com"
//                    (principals.ts); Terraform sets none: a domain: entry is for a hand-run API
//   ADMIN_EMAILS     bare emails, the same as user:/serviceAccount: entries — what Terraform passes from
//                    var.admin_emails
//   ADMIN_AUDIENCES  accepted `aud` values of those identities' ID tokens: the service URL (service
//                    accounts mint tokens for it) and GCLOUD_CLI_AUDIENCE (`gcloud auth
//                    print-identity-token` for a user). Unset: GCLOUD_CLI_AUDIENCE only, with a warning.
//   ADMIN_TOKENS     "name:token,…" static admin tokens (local plane, CI, break-glass)
//   PROXYPLANE_LOCAL "1" allows running with none of the above: auth OFF, announced loudly at start.
//                    So does FIRESTORE_EMULATOR_HOST (the local plane, the tests): a service whose store
//                    is the emulator cannot touch real data — the same rule as the lease service's.
// Anything else with no credential configured refuses to start: an open admin API must be a decision.
import { AuthConfigError, type Authenticator, anyOf, openAuthenticator } from './authenticator.js';
import { googleIdentityAuthenticator } from './google-identity.js';
import { GCLOUD_CLI_AUDIENCE, GoogleIdTokenVerifier, type IdTokenVerifier } from './id-token-verifier.js';
import { parseAdminPrincipals } from './principals.js';
import { type NamedToken, parseAdminTokens, staticTokenAuthenticator } from './static-tokens.js';

export interface GoogleAdmins {
  emails: string[];
  domains: string[];
  audiences: string[];
}

export type AuthConfig =
  | { mode: 'open'; warnings: string[] }
  | { mode: 'enforced'; tokens: NamedToken[]; google: GoogleAdmins | null; warnings: string[] };

const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

export function loadAuthConfig(env: Record<string, string | undefined>): AuthConfig {
  const warnings: string[] = [];
  const tokens = parseAdminTokens(env.ADMIN_TOKENS ?? '');
  // Set but empty is a mistake, not a choice (as DISCOVERY_TOKENS, leases/config.ts): a rotation to a
  // blank version started an API that answered every break-glass and CI token 401 behind a passing health
  // check; refused, Cloud Run keeps serving the revision before it.
  if (env.ADMIN_TOKENS !== undefined && tokens.length === 0) {
    throw new AuthConfigError(
      'ADMIN_TOKENS is set but names no admin token ("name:token,…"); unset it to use ADMIN_PRINCIPALS / ADMIN_EMAILS alone',
    );
  }
  const fromPrincipals = parseAdminPrincipals(list(env.ADMIN_PRINCIPALS), 'ADMIN_PRINCIPALS');
  const fromEmails = parseAdminPrincipals(
    list(env.ADMIN_EMAILS).map((e) => (e.includes(':') ? e : `user:${e}`)),
    'ADMIN_EMAILS',
  );
  const emails = [...new Set([...fromPrincipals.emails, ...fromEmails.emails])];
  const domains = [...new Set([...fromPrincipals.domains, ...fromEmails.domains])];
  for (const entry of [...fromPrincipals.ignored, ...fromEmails.ignored]) {
    warnings.push(
      `admin principal "${entry}" ignored: group membership is not in an ID token; list its members`,
    );
  }
  let audiences = list(env.ADMIN_AUDIENCES);
  const google = emails.length + domains.length > 0;
  if (google && audiences.length === 0) {
    audiences = [GCLOUD_CLI_AUDIENCE];
    warnings.push(
      'ADMIN_AUDIENCES is unset: only user tokens from `gcloud auth print-identity-token` are accepted; add the service URL to accept service-account tokens',
    );
  }
  if (tokens.length === 0 && !google) {
    if (env.PROXYPLANE_LOCAL === '1' || env.FIRESTORE_EMULATOR_HOST) return { mode: 'open', warnings };
    throw new AuthConfigError(
      'no admin credential configured (ADMIN_PRINCIPALS, ADMIN_EMAILS or ADMIN_TOKENS); set PROXYPLANE_LOCAL=1 to run with auth off locally',
    );
  }
  return { mode: 'enforced', tokens, google: google ? { emails, domains, audiences } : null, warnings };
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
    const { emails, domains, audiences } = config.google;
    const verifier = options.verifier ?? new GoogleIdTokenVerifier({ audiences, certsUrl: options.certsUrl });
    parts.push(googleIdentityAuthenticator({ verifier, allowedEmails: emails, allowedDomains: domains }));
  }
  return anyOf(parts);
}
