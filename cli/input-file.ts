// `-f FILE` for the commands that read one (`proxies create|apply`, `routing apply`): the file's text (`-`:
// stdin), and a YAML document's value. Every failure is the caller's input (exit 2, nothing sent), not a bug.
import type { Document } from 'yaml';
import type { z } from 'zod';
import type { Io } from './context.js';
import { InputError } from './errors.js';

/**
 * The largest file read: `proxies list -o yaml` prints ~1.5 KB a Ready managed proxy (more with inline
 * cloud-init), so 16 MiB holds a saved fleet of ~10,000 — at 1 MiB, the list → edit → apply of ~670 was
 * refused. Past it, parsing would be work for nothing: the file is refused before it is parsed.
 */
export const MAX_INPUT_BYTES = 16 * 1024 * 1024;

/** Refuses text over MAX_INPUT_BYTES, saying to split it. */
export function assertInputSize(text: string, source: string): void {
  if (Buffer.byteLength(text) > MAX_INPUT_BYTES) throw new InputError(`${source} is over 16 MiB: split it`);
}

/** The text of `-f FILE` and what to call it in messages; a missing, unreadable or directory path is input. */
export async function readInput(
  io: Pick<Io, 'readFile' | 'readStdin'>,
  file: string,
): Promise<{ text: string; source: string }> {
  const source = file === '-' ? 'stdin' : file;
  const text = await (file === '-' ? io.readStdin() : io.readFile(file)).catch((err: unknown) => {
    const code = (err as { code?: unknown } | null)?.code;
    throw new InputError(`cannot read ${source}: ${typeof code === 'string' ? code : 'read failed'}`, [], {
      cause: err,
    });
  });
  return { text, source };
}

/**
 * A parsed YAML (or JSON) document's value, `where` naming it in messages. No alias expansion at all
 * ("billion laughs"): no input of the CLI has a use for aliases.
 */
export function documentValue(doc: Document.Parsed, where: string): unknown {
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = e.linePos?.[0] ? ` line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '';
    throw new InputError(`${where} is not valid YAML or JSON:${line} ${e.message.split('\n')[0]}`);
  }
  try {
    return doc.toJS({ maxAliasCount: 0 });
  } catch (err) {
    throw new InputError(`${where} is not valid YAML or JSON: ${(err as Error).message}`, [], { cause: err });
  }
}

/**
 * A schema's refusal as "PATH: why" lines (the first 20), `prefix` before each path; an unknown field is
 * named as such ("unknown field(s) x, y"), never as zod's wording.
 */
export function issueLines(error: z.ZodError, prefix?: string): string[] {
  return error.issues.slice(0, 20).map((issue) => {
    const path = [...(prefix ? [prefix] : []), ...issue.path].join('.') || '(top level)';
    const msg =
      issue.code === 'unrecognized_keys' ? `unknown field(s) ${issue.keys.join(', ')}` : issue.message;
    return `${path}: ${msg}`;
  });
}
