// Temporary directories a test file makes (a snapshot file, a certificate): removed after the file's tests
// by per-file-setup.ts, wherever they were made — at module level, in a hook, or in a fixture. Each left
// behind before, and /tmp held hundreds of them after a few runs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

/** A new directory under the system's temp dir, named from `prefix`. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every directory tempDir made since the last call. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
