// Paging of GET /v1/proxies (AIP-158, as GET /v1/gateway/workers?all=true pages): `pageSize` proxies read
// at most, in name order, each page after the last name the one before read. The page token is opaque to
// callers: base64url of `<filters tag>.<last name read>`. The tag binds it to the filters of the listing
// it continues, so that a token sent with other filters is refused (400) rather than answered with a page
// of another listing that silently starts in the middle. Not a secret and not signed: a token made by
// hand can only start a listing after some name, which the caller may list anyway.
import { createHash } from 'node:crypto';
import { base64urlText, isDocumentId } from '../validation/document-id.js';

/**
 * The most proxies a page reads. ~1 MB of JSON for a crawler (no cloud-init) and for an admin on a fleet
 * without inline cloud-init; an admin page of proxies each carrying 32 KiB of it reaches Cloud Run's 32 MiB
 * near this size: the CLI asks for 500 (docs/api.md § Paging).
 */
export const MAX_LIST_PAGE_SIZE = 1000;
/** The page size of a listing that sends a pageToken and no pageSize. */
export const DEFAULT_LIST_PAGE_SIZE = MAX_LIST_PAGE_SIZE;

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
