// Named static admin tokens (ADMIN_TOKENS="ci:…,alice:…"): several at once so that one can be rotated while
// the others keep working, and named so that the request log says which one was used (never its value).
// Compared in constant time on SHA-256 digests, which have equal length whatever the caller sends.
import { createHash, timingSafeEqual } from 'node:crypto';
import { AuthConfigError, type Authenticator } from './authenticator.js';

export interface NamedToken {
  name: string;
  token: string;
}

export const MIN_TOKEN_LENGTH = 16;

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

const TOKEN_PATTERN = /^[A-Za-z0-9\-._~+/]+=*$/;
const TOKEN_NAME = /^[a-z0-9][-_a-z0-9]{0,31}$/i;

/**
 * Parses a comma-separated "name:token" list from the variable `variable` (ADMIN_TOKENS, DISCOVERY_TOKENS,
 * WORKER_TOKENS): each name must pass `nameOk` (else "expected <shape>"), each token be URL-safe and at
 * least MIN_TOKEN_LENGTH long. Errors name the entry, never the token.
 */
export function parseTokenList(
  variable: string,
  value: string | undefined,
  name: { ok: (name: string) => boolean; shape: string } = {
    ok: (n) => TOKEN_NAME.test(n),
    shape: 'name:token with a name of [-_a-zA-Z0-9]',
  },
): NamedToken[] {
  const entries = (value ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  return entries.map((entry, i) => {
    const colon = entry.indexOf(':');
    const n = colon > 0 ? entry.slice(0, colon) : '';
    const token = colon > 0 ? entry.slice(colon + 1) : '';
    if (!name.ok(n)) throw new AuthConfigError(`${variable} entry ${i + 1}: expected ${name.shape}`);
    if (token.length < MIN_TOKEN_LENGTH || !TOKEN_PATTERN.test(token)) {
      throw new AuthConfigError(
        // By its place, not its name: an entry written token:name has the token where the name goes.
        `${variable} entry ${i + 1}: the token must be at least ${MIN_TOKEN_LENGTH} URL-safe characters`,
      );
    }
    return { name: n, token };
  });
}

/** Named tokens whose names are unique (ADMIN_TOKENS, DISCOVERY_TOKENS). */
export function parseUniqueNamedTokens(variable: string, value: string | undefined): NamedToken[] {
  const tokens = parseTokenList(variable, value);
  if (new Set(tokens.map((t) => t.name)).size !== tokens.length) {
    throw new AuthConfigError(`${variable}: names must be unique`);
  }
  return tokens;
}

/** Parses ADMIN_TOKENS="name1:token1,name2:token2". Throws AuthConfigError naming the entry (never the token). */
export const parseAdminTokens = (value: string): NamedToken[] =>
  parseUniqueNamedTokens('ADMIN_TOKENS', value);

export function staticTokenAuthenticator(tokens: NamedToken[]) {
  const known = tokens.map((t) => ({ name: t.name, digest: digest(t.token) }));
  return {
    description: `tokens(${known.length})`,
    // Any token may be a static one; a Google ID token simply never matches.
    recognises: (_token: string) => known.length > 0,
    async authenticate(token: string | undefined) {
      if (!token) return { ok: false, code: 'unauthenticated', reason: 'missing bearer token' } as const;
      const presented = digest(token);
      let match: string | undefined;
      // Compare against every entry so that timing does not tell which position matched.
      for (const k of known) if (timingSafeEqual(presented, k.digest)) match ??= k.name;
      return match
        ? ({ ok: true, principal: { kind: 'token', name: match } } as const)
        : ({ ok: false, code: 'unauthenticated', reason: 'unknown token' } as const);
    },
  } satisfies Authenticator & { recognises(token: string): boolean };
}
