// Why a stored proxy document does not fit the model, in a form that can leave the process: the field
// (a dot path from the document's root), zod's issue code, and zod's message. Never the stored value: zod
// 4's messages name the expected type, a bound or the schema's own constants ("Invalid input: expected
// number, received string", "must be a DNS label: …"), and every message of the Proxy schema is a
// constant — so a password pasted into the wrong field does not come back in an API answer or a log line.
// Unknown keys name the key, which is the document's structure, not a value.
import type { z } from 'zod';

export interface StoredIssue {
  path: string;
  code: string;
  message: string;
}

/** At most this many issues: a document broken everywhere must not make a 60 KiB answer. */
export const MAX_STORED_ISSUES = 20;
const MAX_SEGMENT = 64;
const MAX_MESSAGE = 200;

const clip = (s: string, max: number) => (s.length > max ? `${s.slice(0, max)}…` : s);
const joinPath = (path: ReadonlyArray<PropertyKey>) =>
  path.map((p) => clip(String(p), MAX_SEGMENT)).join('.');

/** The paths of the fields that do not fit (`(document)` for the whole), for a reader's log line. */
export const storedFields = (error: z.ZodError): string[] =>
  storedIssues(error).map((i) => i.path || '(document)');

export function storedIssues(error: z.ZodError): StoredIssue[] {
  const out: StoredIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        out.push({
          path: joinPath([...issue.path, key]),
          code: 'unrecognized_key',
          message: 'unknown field',
        });
      }
    } else {
      out.push({ path: joinPath(issue.path), code: issue.code, message: clip(issue.message, MAX_MESSAGE) });
    }
  }
  return out.slice(0, MAX_STORED_ISSUES);
}
