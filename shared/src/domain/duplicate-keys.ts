// A key repeated in one object of a JSON text. JSON.parse keeps the last one silently (RFC 8259 §4 leaves
// it to the parser), so `{"name":"p4","name":"p5"}` would create p5 although the caller may have read p4:
// the API refuses such a body (issue `duplicate_key`, docs/api.md § Errors), and the CLI its `-p` patch, as
// its file reader refuses a YAML or JSON file with one (yaml's uniqueKeys); the gateway its POST /v1/fetch
// body (`{"url":"https://a/","url":"https://b/"}` would fetch b).
//
// One linear pass over text that JSON.parse has already accepted: only strings, brackets, ":" and ","
// matter, so nothing here re-checks the syntax. Keys are compared as JSON.parse reads them (escapes
// decoded: "a" and "\u0061" are one key). Iterative, so no nesting can overflow the stack.

/** A path segment: an object key, or an array index. */
export type JsonPathSegment = string | number;

/** What a refusal of a repeated key says (the API's and the gateway's alike): its path, never its values. */
export const DUPLICATE_KEY_MESSAGE = 'appears more than once in its object (which value was meant?)';

export interface DuplicateKey {
  /** From the root to the repeated key, the key last. */
  path: JsonPathSegment[];
}

type Frame = { keys: Set<string>; key: string | null; expectKey: boolean } | { index: number };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Index of the quote that closes the string opened at `open` (the end of `text` if none: not JSON). */
function closingQuote(text: string, open: number): number {
  let at = text.indexOf('"', open + 1);
  for (;;) {
    if (at === -1) return text.length;
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
    at = text.indexOf('"', at + 1);
  }
}

/**
 * The first key that appears twice in one object of `text`, or null. `text` must be valid JSON (call it
 * after JSON.parse succeeded): on anything else the answer means nothing.
 */
export function findDuplicateKey(text: string): DuplicateKey | null {
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = closingQuote(text, i);
      const top = stack[stack.length - 1];
      if (top !== undefined && 'keys' in top && top.expectKey) {
        const raw = text.slice(i + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (top.keys.has(key)) return { path: [...pathOf(stack.slice(0, -1)), key] };
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
      i = end;
    } else if (c === 0x7b /* { */) {
      stack.push({ keys: new Set(), key: null, expectKey: true });
    } else if (c === 0x5b /* [ */) {
      stack.push({ index: 0 });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top === undefined) continue;
      if ('keys' in top) top.expectKey = true;
      else top.index++;
    }
  }
  return null;
}

const pathOf = (frames: Frame[]): JsonPathSegment[] =>
  frames.map((f) => ('keys' in f ? (f.key ?? '') : f.index));
