// zod issues → the API's `issues` array: a dot path from the root of what was validated, zod's issue code
// (stable across zod 4 releases), and a short message. Echoed input is truncated: a hostile 60 KiB key
// must not come back 60 KiB long.
import type { z } from 'zod';
import type { Issue } from '../errors.js';

const MAX_ISSUES = 20;
const MAX_SEGMENT = 64;
const MAX_MESSAGE = 200;

const clip = (s: string, max: number) => (s.length > max ? `${s.slice(0, max)}…` : s);

export function joinPath(path: ReadonlyArray<PropertyKey>): string {
  return path.map((p) => clip(String(p), MAX_SEGMENT)).join('.');
}

export function toIssues(error: z.ZodError, prefix: ReadonlyArray<PropertyKey> = []): Issue[] {
  const out: Issue[] = [];
  for (const issue of error.issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        out.push({ path: joinPath([...path, key]), code: 'unrecognized_key', message: 'unknown field' });
      }
    } else if (issue.code === 'invalid_key') {
      const inner = issue.issues[0]?.message ?? issue.message;
      out.push({ path: joinPath(path), code: 'invalid_key', message: clip(inner, MAX_MESSAGE) });
    } else if (issue.code === 'custom' && typeof issue.params?.issue === 'string') {
      // A rule of ours that names its own stable code (e.g. too_many_target_checks).
      out.push({ path: joinPath(path), code: issue.params.issue, message: clip(issue.message, MAX_MESSAGE) });
    } else {
      out.push({ path: joinPath(path), code: issue.code, message: clip(issue.message, MAX_MESSAGE) });
    }
  }
  return out.slice(0, MAX_ISSUES);
}
