import { describe, expect, it } from 'vitest';
import { GceError } from './errors.js';
import { decodePageToken, pageScope, parseMaxResults, takePage } from './paging.js';

describe('paging', () => {
  it.each([
    [null, 500],
    ['', 500],
    ['0', 500],
    ['1', 1],
    ['500', 500],
  ])('maxResults %s → %s', (raw, n) => {
    expect(parseMaxResults(raw)).toBe(n);
  });

  it.each(['501', '-1', 'x', '1.5'])('maxResults %s → 400 invalid', (raw) => {
    expect(() => parseMaxResults(raw)).toThrow(GceError);
  });

  it('walks every item exactly once, even when items change between pages', () => {
    const scope = pageScope('list', null);
    let items = ['a', 'b', 'c', 'd', 'e'];
    const seen: string[] = [];
    let token: string | undefined;
    const first = takePage(items, (s) => s, null, 2, scope);
    seen.push(...first.page);
    token = first.nextPageToken;
    items = items.filter((s) => s !== 'c'); // deleted between pages
    while (token) {
      const next = takePage(items, (s) => s, decodePageToken(token, scope), 2, scope);
      seen.push(...next.page);
      token = next.nextPageToken;
    }
    expect(seen).toEqual(['a', 'b', 'd', 'e']);
  });

  it('rejects a token from another listing or garbage', () => {
    const token = takePage(['a', 'b'], (s) => s, null, 1, pageScope('x')).nextPageToken!;
    expect(() => decodePageToken(token, pageScope('y'))).toThrow(GceError);
    expect(() => decodePageToken('%%%', pageScope('x'))).toThrow(GceError);
    expect(decodePageToken(token, pageScope('x'))).toBe('a');
  });
});
