// The repository as the docs test sees it: which files exist (by path and by name), and the text of the
// code the docs describe, without its tests.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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

/**
 * The files of the repository as a fresh `git clone` has them: tracked, plus new files not yet added
 * (`git ls-files --cached --others --exclude-standard`), less tracked ones deleted from the working tree.
 * Never what .gitignore keeps out (coverage/, *.tfstate, a running plane's .local-plane/, …): a doc that
 * names such a file would pass here and fail on a clean checkout. Outside a git work tree (an exported
 * tarball), every file the walk finds.
 */
export function repoFiles(repoRoot: string): string[] {
  let listed: string;
  try {
    listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: repoRoot,
      // The repository at repoRoot, whatever GIT_DIR / GIT_INDEX_FILE a hook running the tests has set.
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_'))),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch {
    return listFiles(repoRoot);
  }
  return [...new Set(listed.split('\0'))]
    .filter((f) => f !== '' && !f.split('/').some((s) => SKIP_DIRS.has(s)) && existsSync(join(repoRoot, f)))
    .sort();
}

/** Every directory that holds one of `files` (at any depth), repository-relative. */
export function dirsOf(files: string[]): Set<string> {
  const out = new Set<string>();
  for (const f of files) {
    const parts = f.split('/');
    for (let i = 1; i < parts.length; i++) out.add(parts.slice(0, i).join('/'));
  }
  return out;
}

/** The top-level directories a repository path can start with (`shared`, `functions`, …). */
export function topDirs(files: string[]): string[] {
  return [...new Set(files.filter((f) => f.includes('/')).map((f) => f.split('/')[0]!))]
    .filter((d) => !d.startsWith('.') && !SKIP_DIRS.has(d))
    .sort();
}

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
