// The docs test (references.test.ts) checks names against the repository as a fresh clone has it. A file
// that .gitignore keeps out (coverage/, *.tfstate, a running plane's .local-plane/) exists only in a dev
// checkout: a doc naming it must fail here too, not only in CI. A new file not yet added counts (it is
// about to be committed with the doc); a tracked file deleted from the working tree does not.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dirsOf, repoFiles, topDirs } from './support/repo.js';

const root = mkdtempSync(join(tmpdir(), 'docs-repo-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const write = (rel: string, text = 'x\n') => {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), text);
};
// Only this scratch repository: no GIT_DIR / GIT_INDEX_FILE inherited (a hook running the tests sets them
// and would point these commands at the real one), no signing or hooks of the user's configuration.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_')));
const git = (...args: string[]) =>
  execFileSync(
    'git',
    [
      ...['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false'],
      ...['-c', 'core.hooksPath=/dev/null', ...args],
    ],
    { cwd: root, env, stdio: 'ignore' },
  );

describe('repoFiles', () => {
  it('is what git tracks plus new files, never an ignored or a deleted one', () => {
    write('.gitignore', 'coverage/\n*.tfstate\n');
    write('docs/a.md');
    write('shared/src/kept.ts');
    write('shared/src/gone.ts');
    git('init', '-q');
    git('add', '.');
    git('commit', '-q', '-m', 'init');
    write('shared/src/new.ts'); // not added yet
    write('coverage/index.json'); // ignored
    write('terraform/terraform.tfstate'); // ignored
    unlinkSync(join(root, 'shared/src/gone.ts')); // deleted, not staged

    const files = repoFiles(root);
    expect(files).toEqual(['.gitignore', 'docs/a.md', 'shared/src/kept.ts', 'shared/src/new.ts']);
    expect(topDirs(files)).toEqual(['docs', 'shared']);
    expect([...dirsOf(files)].sort()).toEqual(['docs', 'shared', 'shared/src']);
  });
});
