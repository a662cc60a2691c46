// The repository as the docs test sees it: which files exist (by path and by name), and the text of the
// code the docs describe, without its tests.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Never walked: dependencies, build output, local state, Terraform's provider cache. */
const SKIP_DIRS = new Set(['node_modules', '.git', 'dist', '.terraform', '.local-plane', 'test-artifacts']);

/** Every file of the repository, repository-relative with forward slashes. */
export function listFiles(repoRoot: string, dir = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(repoRoot, dir), { withFileTypes: true })) {
    if (SKIP_DIRS.has(entry.name)) continue;
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...listFiles(repoRoot, rel));
    else out.push(rel);
  }
  return out;
}

/** The top-level directories a repository path can start with (`shared`, `functions`, …). */
export function topDirs(repoRoot: string): string[] {
  return readdirSync(repoRoot, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !SKIP_DIRS.has(e.name))
    .map((e) => e.name)
    .sort();
}

export const isDir = (path: string) => existsSync(path) && statSync(path).isDirectory();

/** The directories that hold the code the docs describe (brief: functions, shared, emulators, …). */
export const CODE_DIRS = [
  'functions',
  'shared',
  'emulators',
  'terraform',
  'bin',
  'bench',
  'cli',
  'docs/examples',
];
const CODE_EXT = /\.(ts|mjs|js|sh|tf|json|hcl|yaml|yml|example)$/;

/** The code's files: what ships and runs, not its tests (a name only a test uses is not the product's). */
export function codeFiles(files: string[]): string[] {
  return files.filter(
    (f) =>
      CODE_DIRS.some((d) => f.startsWith(`${d}/`)) &&
      CODE_EXT.test(f) &&
      !/\.test\.ts$/.test(f) &&
      !f.endsWith('.tftest.hcl') &&
      !f.startsWith('bench/results/'),
  );
}

export function readAll(repoRoot: string, files: string[]): Map<string, string> {
  return new Map(files.map((f) => [f, readFileSync(join(repoRoot, f), 'utf8')]));
}
