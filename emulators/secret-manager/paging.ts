// List paging as Google APIs do it: pageSize (0 = server default, capped), an opaque pageToken that is a
// cursor (the last item's key) so inserts between pages never repeat or skip an item.
import { invalidArgument } from './api-error.js';

const MAX_PAGE_SIZE = 25_000;

export interface Page<T> {
  items: T[];
  nextPageToken: string;
  totalSize: number;
}

export function parsePageSize(raw: string | null): number {
  if (raw === null || raw === '') return MAX_PAGE_SIZE;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw invalidArgument(`Invalid value for page_size: ${raw}`);
  return n === 0 ? MAX_PAGE_SIZE : Math.min(n, MAX_PAGE_SIZE);
}

/** `items` must already be in list order; `key` is unique and `after(key, cursor)` says it comes later. */
export function paginate<T>(
  items: T[],
  key: (item: T) => string,
  after: (k: string, cursor: string) => boolean,
  pageSize: number,
  pageToken: string | null,
): Page<T> {
  let rest = items;
  if (pageToken) {
    const cursor = Buffer.from(pageToken, 'base64url').toString('utf8');
    if (!cursor.startsWith('c:')) throw invalidArgument('Invalid page token.');
    rest = items.filter((item) => after(key(item), cursor.slice(2)));
  }
  const page = rest.slice(0, pageSize);
  const last = page.at(-1);
  const nextPageToken =
    rest.length > pageSize && last ? Buffer.from(`c:${key(last)}`, 'utf8').toString('base64url') : '';
  return { items: page, nextPageToken, totalSize: items.length };
}
