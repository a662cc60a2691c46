// Who may use the gateway: named client users (Proxy-Authorization: Basic on the proxy listener; Basic or
// Bearer on the fetch endpoint) and bearer tokens, all from configuration. Comparisons are constant-time
// over sha256 digests, so neither a password's length nor its prefix leaks through timing.
import { createHash, timingSafeEqual } from 'node:crypto';

export interface ClientUser {
  readonly username: string;
  readonly password: string;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
const DUMMY = digest('\u0000no-such-user');

const VERIFIED_CACHE_SIZE = 1024;
/** RFC 4648 base64, padding optional but only at the end (RFC 7617's token68 credentials). */
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export class ClientAuth {
  private readonly users: Map<string, Buffer>;
  private readonly tokens: Buffer[];
  /**
   * Header values already verified → user. Crawlers repeat the same credential on every connection, and
   * this saves a base64 decode and a hash per request; only successes are cached, keyed by the whole
   * value, so a guess never gets a cheaper or different path than a wrong password.
   */
  private readonly verified = new Map<string, string>();

  /** `required: false` lets every request through (local experiments only; the config says so loudly). */
  constructor(
    users: readonly ClientUser[],
    tokens: readonly string[],
    readonly required = true,
  ) {
    this.users = new Map(users.map((u) => [u.username, digest(u.password)]));
    this.tokens = tokens.map(digest);
  }

  /** The user a `Basic …` credential names, or null. Anonymous ("") when auth is not required. */
  basic(header: string | undefined): string | null {
    if (!this.required) return '';
    if (!header) return null;
    const hit = this.verified.get(header);
    if (hit !== undefined) return hit;
    if (header.length < 7 || header.slice(0, 6).toLowerCase() !== 'basic ') return null;
    const token = header.slice(6).trim();
    // Node's base64 decoder skips what is not base64 and stops at the first '=': unchecked, "user:pass"
    // followed by "=" and anything (or with spaces inside) was the same credential under endless
    // spellings, each a new entry of the verified cache.
    if (!BASE64.test(token)) return null;
    const decoded = Buffer.from(token, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return null;
    const user = decoded.slice(0, colon);
    const expected = this.users.get(user);
    const ok = timingSafeEqual(digest(decoded.slice(colon + 1)), expected ?? DUMMY);
    if (!ok || !expected) return null;
    // Only the canonical spelling is remembered — `Basic `, one space, the padded base64 of the credential,
    // as clients send it: the scheme's case, the spaces after it (RFC 9110 §11.4), the padding and the
    // unused bits of a last base64 character give one credential thousands of spellings, and one
    // authenticated client must not be able to fill the cache, and clear everyone's entries, with them.
    if (header !== `Basic ${Buffer.from(decoded, 'utf8').toString('base64')}`) return user;
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.clear();
    this.verified.set(header, user);
    return user;
  }

  /**
   * Who a `Bearer …` credential is, or null: `bearer:<n>`, the token's place in GATEWAY_FETCH_TOKENS (never
   * the token itself), so each token's callers are a client of their own — their sticky keys and their
   * share of the sticky table (pick.ts StickyTable) — and never a client user, whose name has no colon.
   * Anonymous ("") when auth is not required.
   */
  bearer(header: string | undefined): string | null {
    if (!this.required) return '';
    if (header?.slice(0, 7).toLowerCase() !== 'bearer ') return null;
    const given = digest(header.slice(7).trim());
    // Every token compared, whichever matches: the time taken does not tell which one did.
    let found = -1;
    for (let i = 0; i < this.tokens.length; i++) if (timingSafeEqual(given, this.tokens[i]!)) found = i;
    return found < 0 ? null : `bearer:${found}`;
  }
}
