// Checks a parsed JSON body before any schema sees it: bounded depth (a 30,000-deep array is valid JSON and
// would otherwise reach recursive code), and no prototype-pollution keys anywhere — zod silently drops a
// `__proto__` record key, so without this a hostile body would be accepted instead of refused.
import type { Issue } from '../errors.js';
import { joinPath } from './issues.js';

export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
export const MAX_JSON_DEPTH = 16;

/** The first problem found, or null. Iterative, so the check itself cannot overflow the stack. */
export function inspectJson(value: unknown, maxDepth = MAX_JSON_DEPTH): Issue | null {
  const stack: Array<{ value: unknown; path: PropertyKey[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
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
      if (FORBIDDEN_KEYS.has(key)) {
        return { path: joinPath([...path, key]), code: 'forbidden_key', message: `"${key}" is not allowed` };
      }
      stack.push({ value: item, path: [...path, key] });
    }
  }
  return null;
}
