// maxResults / pageToken as the Compute API treats them: at most 500 per page (the default), an
// opaque token for the next page, and a 400 for a token that does not belong to the request. Tokens
// carry the last key returned (keyset paging), so instances created or deleted between pages never
// shift the remaining ones.
import { createHash } from 'node:crypto';
import { invalidField } from './errors.js';

export const MAX_RESULTS = 500;

export function parseMaxResults(raw: string | null): number {
  if (raw === null || raw === '') return MAX_RESULTS;
  if (!/^\d+$/.test(raw)) throw invalidField('maxResults', raw, 'Must be an integer');
  const n = Number(raw);
  if (n > MAX_RESULTS) throw invalidField('maxResults', raw, `Must be less than or equal to ${MAX_RESULTS}`);
  return n === 0 ? MAX_RESULTS : n;
}

/** What a token is valid for: the same listing, filter and order. */
export const pageScope = (...parts: Array<string | null>) =>
  createHash('sha256').update(parts.join('\u0000')).digest('base64url').slice(0, 16);

export function encodePageToken(afterKey: string, scope: string): string {
  return Buffer.from(JSON.stringify({ a: afterKey, s: scope })).toString('base64url');
}

export function decodePageToken(token: string | null, scope: string): string | null {
  if (token === null || token === '') return null;
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      a?: unknown;
      s?: unknown;
    };
    if (typeof parsed.a === 'string' && parsed.s === scope) return parsed.a;
  } catch {
    // falls through to the 400 below
  }
  throw invalidField('pageToken', token, 'Invalid page token.');
}

/** One page of `items` already sorted by `key` (unique, ascending). */
export function takePage<T>(
  items: readonly T[],
  key: (item: T) => string,
  afterKey: string | null,
  max: number,
  scope: string,
): { page: T[]; nextPageToken?: string } {
  const start = afterKey === null ? 0 : items.findIndex((item) => key(item) > afterKey);
  if (start < 0) return { page: [] };
  const page = items.slice(start, start + max);
  const more = start + max < items.length;
  return more ? { page, nextPageToken: encodePageToken(key(page[page.length - 1]!), scope) } : { page };
}
