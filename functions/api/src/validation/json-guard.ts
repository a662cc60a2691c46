// Checks a parsed JSON body before any schema sees it: bounded depth (a 30,000-deep array is valid JSON and
// would otherwise reach recursive code), and no prototype-pollution keys anywhere — zod silently drops a
// `__proto__` record key, so without this a hostile body would be accepted instead of refused. And every key
// and string must be well-formed UTF-16: JSON.parse turns "\ud800" into a lone surrogate, which Firestore
// refuses when writing (gRPC UNKNOWN on the emulator) — a 500 for what is the caller's bad input.
import type { Issue } from '../errors.js';
import { joinPath } from './issues.js';

export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
export const MAX_JSON_DEPTH = 16;

/** The first problem found, or null. Iterative, so the check itself cannot overflow the stack. */
export function inspectJson(value: unknown, maxDepth = MAX_JSON_DEPTH): Issue | null {
  const stack: Array<{ value: unknown; path: PropertyKey[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (!wellFormed(v)) return illFormed(path);
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (path.length >= maxDepth) {
      return { path: joinPath(path), code: 'too_deep', message: `nested deeper than ${maxDepth} levels` };
    }
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        stack.push({ value: item, path: [...path, i] });
      });
      continue;
    }
    for (const [key, item] of Object.entries(v)) {
      if (!wellFormed(key)) return illFormed([...path, printable(key)]);
      if (FORBIDDEN_KEYS.has(key)) {
        return { path: joinPath([...path, key]), code: 'forbidden_key', message: `"${key}" is not allowed` };
      }
      stack.push({ value: item, path: [...path, key] });
    }
  }
  return null;
}

const illFormed = (path: PropertyKey[]): Issue => ({
  path: joinPath(path),
  code: 'invalid_string',
  message: 'contains an unpaired UTF-16 surrogate (not valid Unicode)',
});

// String.prototype.isWellFormed / toWellFormed are Node 20 (ES2024); tsconfig's lib is es2023.
type Es2024String = { isWellFormed(): boolean; toWellFormed(): string };
const wellFormed = (s: string) => (s as unknown as Es2024String).isWellFormed();
const printable = (s: string) => (s as unknown as Es2024String).toWellFormed();
