// Basic proxy authentication (RFC 9110 §11.7.1 Proxy-Authorization, RFC 7617 Basic).
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * "user:pass", a getter for it (rotation without a restart), or nothing for an open proxy. A getter
 * that yields null or throws denies every request: a proxy whose secret is missing fails closed.
 */
export type CredentialSource = string | null | undefined | (() => Promise<string | null>);

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** The decoded "user:pass" of a `Basic` Proxy-Authorization header, or null when absent or malformed. */
export function decodeBasic(header: string | undefined): string | null {
  if (!header) return null;
  const space = header.indexOf(' ');
  if (space < 0 || header.slice(0, space).toLowerCase() !== 'basic') return null;
  const token = header.slice(space + 1).trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(token)) return null;
  const decoded = Buffer.from(token, 'base64').toString('utf8');
  return decoded.includes(':') ? decoded : null;
}

/**
 * Constant-time in the secret: both sides are hashed to a fixed length first, so neither the
 * comparison time nor an early length check tells a caller how close a guess was.
 */
export function credentialsMatch(presented: string | null, expected: string): boolean {
  if (presented === null) return false;
  return timingSafeEqual(digest(presented), digest(expected));
}

/**
 * The check a proxy runs per request: synchronous for a fixed value (the hot path allocates no
 * promise), asynchronous only when the credentials come from a getter.
 */
export function makeAuthorizer(
  source: CredentialSource,
): (header: string | undefined) => boolean | Promise<boolean> {
  if (source === null || source === undefined) return () => true;
  if (typeof source === 'string') {
    const expected = digest(source);
    return (header) => {
      const presented = decodeBasic(header);
      return presented !== null && timingSafeEqual(digest(presented), expected);
    };
  }
  return async (header) => {
    let expected: string | null;
    try {
      expected = await source();
    } catch {
      expected = null;
    }
    return expected !== null && credentialsMatch(decodeBasic(header), expected);
  };
}
