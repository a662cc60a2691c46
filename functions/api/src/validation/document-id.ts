// What a page token may name: the id of a Firestore document to start a page after (the workers' admin
// listing, GET /v1/proxies). A token naming anything else is the caller's at fault: a 400, not a page after
// some arbitrary string, nor a 500 from the client library refusing it.

/**
 * A document id Firestore can start after: not empty, no slash (its client throws on one before it
 * reads), not '.' or '..', not a reserved __id__, at most 1,500 bytes, no NUL. Other control characters
 * are ids like any other: a document written by hand may have one (a name read from a file, its line
 * break kept; docs/api.md: listed under `skipped`), a listing hands out the id of the last document it
 * read, and a token refused for one stopped every paged listing at that page. NUL stays refused although
 * Firestore holds it (the emulator does): no tool writes one by accident, and a token that decodes to NULs
 * is garbage (`AAAA`) — a hand-made id with a NUL would still end a paged listing.
 */
export const isDocumentId = (id: string): boolean =>
  id.length > 0 &&
  Buffer.byteLength(id, 'utf8') <= 1_500 &&
  !id.includes('/') &&
  id !== '.' &&
  id !== '..' &&
  !/^__.*__$/.test(id) &&
  !id.includes('\u0000');

/** The text `token` encodes in canonical base64url, or null when it is no such encoding of UTF-8 text. */
export function base64urlText(token: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,2048}$/.test(token)) return null;
  const text = Buffer.from(token, 'base64url').toString('utf8');
  // Only the encoding a listing hands out: 'zzzzzzzz' decodes to bytes that are no text.
  return Buffer.from(text, 'utf8').toString('base64url') === token ? text : null;
}
