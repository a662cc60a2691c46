// Who may use discovery and leases (seed §7: bearer auth, constant-time, /healthz exempt): a crawler
// token from DISCOVERY_TOKENS — several named ones at once so that they can rotate — or any admin
// credential. Built on the admin API's Authenticator so that both answer 401/403/503 the same way.
// With no crawler tokens configured, only admin credentials work (and nothing is needed in the explicit
// local open mode, which main.ts announces loudly). On admin-only routes a crawler token is refused as
// forbidden (403), not as an unknown credential (adminOnlyAuthenticator).
import { type Authenticator, MAX_TOKEN_LENGTH, type Principal } from '../auth/authenticator.js';
import { type NamedToken, parseUniqueNamedTokens, staticTokenAuthenticator } from '../auth/static-tokens.js';

export type { NamedToken };

/** Crawler principals are named `crawler:<name>`: a colon no admin token name can contain. */
export const CRAWLER_PREFIX = 'crawler:';

/** DISCOVERY_TOKENS="name:token,name2:token2". Throws AuthConfigError naming the entry, never the token. */
export const parseCrawlerTokens = (value: string | undefined): NamedToken[] =>
  parseUniqueNamedTokens('DISCOVERY_TOKENS', value);

/** The crawler whose token this is (compared in constant time, every token every time), or null. */
function crawlerTokens(tokens: readonly NamedToken[]) {
  const crawlers = staticTokenAuthenticator([...tokens]);
  return async (token: string | undefined): Promise<string | null> => {
    if (!token || token.length > MAX_TOKEN_LENGTH || tokens.length === 0) return null;
    const outcome = await crawlers.authenticate(token);
    return outcome.ok && outcome.principal.kind === 'token' ? outcome.principal.name : null;
  };
}

/** Crawler tokens first (compared in constant time), then whatever the admin API accepts. */
export function crawlerOrAdminAuthenticator(
  tokens: readonly NamedToken[],
  admin: Authenticator,
): Authenticator {
  const crawlerOf = crawlerTokens(tokens);
  return {
    description: `crawler-tokens(${tokens.length})|admin:${admin.description}`,
    async authenticate(token) {
      const crawler = await crawlerOf(token);
      if (crawler !== null) {
        const principal: Principal = { kind: 'token', name: `${CRAWLER_PREFIX}${crawler}` };
        return { ok: true, principal };
      }
      return admin.authenticate(token);
    },
  };
}

/** Why a crawler token is refused on an admin-only route (the 403's message; the CLI's hint keys on it). */
export const CRAWLER_TOKEN_REFUSED = 'this is a crawler token; this route takes an admin credential';

/**
 * The admin authenticator for admin-only routes: a token the admin check calls unauthenticated but that
 * is a valid crawler token is `forbidden` (403, RFC 6750 §3.1 insufficient_scope: a valid credential that
 * may not do this), not `unauthenticated` (401: "your credential is invalid", which it is not). The crawler
 * tokens are consulted only then; every other outcome (admin, forbidden, unavailable, unknown token) is the
 * admin authenticator's own.
 */
export function adminOnlyAuthenticator(tokens: readonly NamedToken[], admin: Authenticator): Authenticator {
  if (tokens.length === 0) return admin;
  const crawlerOf = crawlerTokens(tokens);
  return {
    description: admin.description,
    async authenticate(token) {
      const outcome = await admin.authenticate(token);
      if (outcome.ok || outcome.code !== 'unauthenticated') return outcome;
      return (await crawlerOf(token)) === null
        ? outcome
        : { ok: false, code: 'forbidden', reason: CRAWLER_TOKEN_REFUSED };
    },
  };
}

/** Whether the caller came in with a crawler token (crawlerOrAdminAuthenticator), not an admin credential. */
export const isCrawler = (principal: Principal | undefined): boolean =>
  principal?.kind === 'token' && principal.name.startsWith(CRAWLER_PREFIX);

/** The name a lease records as its holder. */
export function holderOf(principal: Principal | undefined): string {
  if (!principal) return 'anonymous';
  if (principal.kind === 'google') return principal.email;
  return principal.kind === 'token' ? principal.name : 'local';
}
