// Bearer auth for crawlers (seed §7: "bearer auth (constant-time; /healthz exempt)"). Several named tokens
// are accepted at once so that one can be rotated while the others keep working; the name (never the
// token) is what logs and lease records show. No tokens configured = auth off, which only the local
// plane may do (the entry point refuses it elsewhere, and warns loudly here).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';

export interface NamedToken {
  name: string;
  token: string;
}

export type AuthEnv = { Variables: { principal: string } };

export const ANONYMOUS = 'anonymous';
const MIN_TOKEN_LENGTH = 16;

/** DISCOVERY_TOKENS="name:token,name2:token2". Throws on anything ambiguous, so a typo fails the start. */
export function parseTokens(spec: string | undefined): NamedToken[] {
  if (!spec?.trim()) return [];
  const tokens = spec.split(',').map((part) => {
    const i = part.indexOf(':');
    const name = part.slice(0, i).trim();
    const token = part.slice(i + 1).trim();
    if (i <= 0 || !/^[a-zA-Z0-9_.-]{1,64}$/.test(name)) {
      throw new Error('DISCOVERY_TOKENS: each entry is name:token with a name of [a-zA-Z0-9_.-]');
    }
    if (token.length < MIN_TOKEN_LENGTH)
      throw new Error(`DISCOVERY_TOKENS: token "${name}" is shorter than 16`);
    return { name, token };
  });
  const names = new Set(tokens.map((t) => t.name));
  if (names.size !== tokens.length) throw new Error('DISCOVERY_TOKENS: token names must be unique');
  return tokens;
}

export interface CrawlerAuthOptions {
  tokens: readonly NamedToken[];
  /** Paths served without a token. */
  exempt?: readonly string[];
  /** Another credential accepted in place of a crawler token (e.g. the admin API's); returns a principal or null. */
  alternative?: (c: Context) => Promise<string | null>;
}

export function crawlerAuth(opts: CrawlerAuthOptions): MiddlewareHandler<AuthEnv> {
  const exempt = new Set(opts.exempt ?? ['/healthz']);
  // Comparing fixed-length digests makes the comparison independent of the presented token's length.
  const digests = opts.tokens.map((t) => ({ name: t.name, digest: sha256(t.token) }));
  return async (c, next) => {
    if (exempt.has(c.req.path)) return next();
    if (digests.length === 0 && !opts.alternative) {
      c.set('principal', ANONYMOUS);
      return next();
    }
    const presented = bearer(c.req.header('authorization'));
    let principal: string | null = null;
    if (presented !== null) {
      const d = sha256(presented);
      for (const t of digests) if (timingSafeEqual(d, t.digest) && principal === null) principal = t.name;
    }
    principal ??= (await opts.alternative?.(c)) ?? null;
    if (principal === null) {
      c.header('WWW-Authenticate', 'Bearer realm="proxyplane"');
      return c.json({ error: 'unauthorized' }, 401);
    }
    c.set('principal', principal);
    return next();
  };
}

function bearer(header: string | undefined): string | null {
  const m = header?.match(/^Bearer +([^\s]+) *$/i);
  return m?.[1] ?? null;
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
