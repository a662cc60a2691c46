// Conditional requests (RFC 9110). A proxy's entity tag is its spec generation and its uid,
// `"<generation>.<uid>"`, a strong validator: the API bumps generation by exactly one on every spec write,
// and only then; the uid tells two proxies of one name apart (deleted, then created again, both start at
// generation 1), so a tag read from the first never matches the second. The routing's is its revision,
// `"<revision>"` (one document, never re-created). If-Match is parsed here and compared strongly
// (§8.8.3.2): a weak tag never matches, `"07"` is not `"7"`. Pure: no I/O, no Hono.

/** One entity-tag of an If-Match list: `W/"7"` is `{weak: true, opaque: '7'}`. */
export interface EntityTag {
  weak: boolean;
  opaque: string;
}

/** A parsed If-Match: `*` (any current representation) or a list of entity tags (at least one). */
export type IfMatch = { kind: 'any' } | { kind: 'tags'; tags: readonly EntityTag[] };

/** An entity tag, quoted: `etagOf('7')` is `"7"`. */
export const etagOf = (opaque: string | number): string => `"${opaque}"`;

/** A proxy's opaque tag: its spec generation and its uid (module comment). */
export const proxyTag = (p: { generation: number; uid: string }): string => `${p.generation}.${p.uid}`;

const isOws = (ch: string) => ch === ' ' || ch === '\t';
// etagc = %x21 / %x23-7E / obs-text (%x80-FF): visible ASCII but DQUOTE, and obs-text. A comma is an
// etagc, so a list cannot be split on commas.
const isEtagc = (code: number) =>
  code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff);

/**
 * `If-Match = "*" / #entity-tag` (§13.1.1, list syntax §5.6.1: empty elements and OWS around commas are
 * accepted). Returns null for a malformed value: not `*` alone and not a list of entity tags, or a list
 * with no tag at all (an empty header is a client bug more often than a wish for 412).
 */
export function parseIfMatch(raw: string): IfMatch | null {
  let i = 0;
  const skipOws = () => {
    while (i < raw.length && isOws(raw[i]!)) i++;
  };
  skipOws();
  if (raw[i] === '*') {
    i++;
    skipOws();
    return i === raw.length ? { kind: 'any' } : null;
  }
  const tags: EntityTag[] = [];
  while (i < raw.length) {
    if (raw[i] === ',') {
      i++;
      skipOws();
      continue;
    }
    let weak = false;
    if (raw.startsWith('W/', i)) {
      weak = true;
      i += 2;
    }
    if (raw[i] !== '"') return null;
    const start = ++i;
    while (i < raw.length && raw[i] !== '"') {
      if (!isEtagc(raw.charCodeAt(i))) return null;
      i++;
    }
    if (i === raw.length) return null; // no closing DQUOTE
    tags.push({ weak, opaque: raw.slice(start, i) });
    i++;
    skipOws();
    if (i < raw.length && raw[i] !== ',') return null;
  }
  return tags.length > 0 ? { kind: 'tags', tags } : null;
}

/** Whether If-Match holds for an existing representation whose opaque tag is `opaque` (strong comparison). */
export function ifMatchHolds(condition: IfMatch, opaque: string): boolean {
  if (condition.kind === 'any') return true;
  return condition.tags.some((t) => !t.weak && t.opaque === opaque);
}

/** The tags as sent, for a message: `"7" or W/"8"`. */
export const describeIfMatch = (condition: IfMatch): string =>
  condition.kind === 'any'
    ? '*'
    : condition.tags.map((t) => `${t.weak ? 'W/' : ''}"${t.opaque}"`).join(' or ');
