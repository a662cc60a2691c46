// Paging of GET /v1/proxies (AIP-158, as GET /v1/gateway/workers?all=true pages): `pageSize` proxies read
// at most, in name order, each page after the last name the one before read. The page token is opaque to
// callers: base64url of `<filters tag>.<last name read>`. The tag binds it to the filters of the listing
// it continues, so that a token sent with other filters is refused (400) rather than answered with a page
// of another listing that silently starts in the middle. Not a secret and not signed: a token made by
// hand can only start a listing after some name, which the caller may list anyway.
import { createHash } from 'node:crypto';
import { MAX_LIST_PAGE_SIZE } from '../../../../shared/src/domain/leases/wire.js';
import { base64urlText, isDocumentId } from '../validation/document-id.js';

/**
 * The most proxies a page reads (the wire contract's bound): ~1 MB of JSON for a crawler (no cloud-init) and
 * for an admin on a fleet without inline cloud-init. An admin page of proxies carrying a lot of it ends
 * early (MAX_PAGE_BYTES).
 */
export { MAX_LIST_PAGE_SIZE };
/** The page size of a listing that sends a pageToken and no pageSize. */
export const DEFAULT_LIST_PAGE_SIZE = MAX_LIST_PAGE_SIZE;

/**
 * A page's answer ends before its proxies' JSON passes this, whatever pageSize asked for: 1,000 proxies
 * each carrying 32 KiB of inline cloud-init (more once JSON escapes it) would pass Cloud Run's 32 MiB.
 */
export const MAX_PAGE_BYTES = 16 * 1024 * 1024;

/**
 * A page cut to `maxBytes` of JSON: its first proxies (one at least) and, when it was cut, the name the next
 * page starts after — the last one kept, so that those read after it are read again there, never skipped.
 */
export function fitPage<P extends { name: string }>(
  proxies: readonly P[],
  maxBytes: number,
): { kept: P[]; cutAfter: string | null } {
  let bytes = 0;
  for (const [i, p] of proxies.entries()) {
    bytes += Buffer.byteLength(JSON.stringify(p), 'utf8') + 1; // and its comma
    if (bytes > maxBytes && i > 0) return { kept: proxies.slice(0, i), cutAfter: proxies[i - 1]!.name };
  }
  return { kept: [...proxies], cutAfter: null };
}

/** A listing's filters as the query gave them (validated): what a page token is bound to. */
export interface ListFilters {
  phase?: string;
  healthy?: string;
  leasable?: string;
  protocol?: string;
  attributes: Record<string, string>;
}

const TAG_LENGTH = 11; // 8 bytes of SHA-256, base64url

/** The filters' tag: the same for the same filters in any order of the query string. */
export function filtersTag(f: ListFilters): string {
  const attributes = Object.entries(f.attributes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const canonical = JSON.stringify([
    f.phase ?? null,
    f.healthy ?? null,
    f.leasable ?? null,
    f.protocol ?? null,
    attributes,
  ]);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, TAG_LENGTH);
}

/** The token of the page after `after` (the last document name a page read) of the listing so tagged. */
export const pageTokenOf = (after: string, tag: string): string =>
  Buffer.from(`${tag}.${after}`, 'utf8').toString('base64url');

/** A token's parts, or null when it is none a listing hands out. */
export function readPageToken(token: string): { tag: string; after: string } | null {
  const text = base64urlText(token);
  if (text === null || text.length < TAG_LENGTH + 2 || text[TAG_LENGTH] !== '.') return null;
  const tag = text.slice(0, TAG_LENGTH);
  const after = text.slice(TAG_LENGTH + 1);
  return /^[A-Za-z0-9_-]+$/.test(tag) && isDocumentId(after) ? { tag, after } : null;
}
