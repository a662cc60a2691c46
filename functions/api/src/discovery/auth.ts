// Who may use discovery and leases (seed §7: bearer auth, constant-time, /healthz exempt): a crawler
// token from DISCOVERY_TOKENS — several named ones at once so that they can rotate — or any admin
// credential. Built on the admin API's Authenticator so that both answer 401/403/503 the same way.
// With no crawler tokens configured, only admin credentials work (and nothing is needed in the explicit
// local open mode, which main.ts announces loudly).
import { type Authenticator, MAX_TOKEN_LENGTH, type Principal } from '../auth/authenticator.js';
import { type NamedToken, parseUniqueNamedTokens, staticTokenAuthenticator } from '../auth/static-tokens.js';

export type { NamedToken };

/** Crawler principals are named `crawler:<name>`: a colon no admin token name can contain. */
export const CRAWLER_PREFIX = 'crawler:';

/** DISCOVERY_TOKENS="name:token,name2:token2". Throws AuthConfigError naming the entry, never the token. */
export const parseCrawlerTokens = (value: string | undefined): NamedToken[] =>
  parseUniqueNamedTokens('DISCOVERY_TOKENS', value);

/** Crawler tokens first (compared in constant time), then whatever the admin API accepts. */
export function crawlerOrAdminAuthenticator(
  tokens: readonly NamedToken[],
  admin: Authenticator,
): Authenticator {
  const crawlers = staticTokenAuthenticator([...tokens]);
  return {
    description: `crawler-tokens(${tokens.length})|admin:${admin.description}`,
    async authenticate(token) {
      if (token && token.length <= MAX_TOKEN_LENGTH && tokens.length > 0) {
        const outcome = await crawlers.authenticate(token);
        if (outcome.ok && outcome.principal.kind === 'token') {
          const principal: Principal = { kind: 'token', name: `${CRAWLER_PREFIX}${outcome.principal.name}` };
          return { ok: true, principal };
        }
      }
      return admin.authenticate(token);
    },
  };
}

/** The name a lease records as its holder. */
export function holderOf(principal: Principal | undefined): string {
  if (!principal) return 'anonymous';
  if (principal.kind === 'google') return principal.email;
  return principal.kind === 'token' ? principal.name : 'local';
}
