import { describe, expect, it } from 'vitest';
import { type Lockfile, prunedLockfile, resolveFrom } from './lockfile.js';

const entry = (version: string, extra: Record<string, unknown> = {}) => ({
  version,
  integrity: `sha512-${version}`,
  ...extra,
});

// A repo lock: the unit depends on `a`; `a` needs b@2 (nested under a, the root has b@1 for `c`) and d
// (hoisted); d has optional dependencies on a platform binary and on g (which `c` requires: no flag in the
// repo) and a required peer e (flagged devOptional in the repo); `c`, the dev tools and what only they
// reach stay out.
const repo: Lockfile = {
  name: 'repo',
  lockfileVersion: 3,
  requires: true,
  packages: {
    '': { name: 'repo', dependencies: { a: '^1.0.0', c: '^1.0.0' }, devDependencies: { t: '^9.0.0' } },
    'node_modules/a': entry('1.2.0', { dependencies: { b: '^2.0.0', d: '^1.0.0' } }),
    'node_modules/a/node_modules/b': entry('2.0.1'),
    'node_modules/b': entry('1.0.0'),
    'node_modules/c': entry('1.0.0', { dependencies: { b: '^1.0.0', g: '^1.0.0' } }),
    'node_modules/d': entry('1.1.0', {
      optionalDependencies: { 'd-linux': '1.1.0', 'd-absent': '1.1.0', g: '^1.0.0' },
      peerDependencies: { e: '^3.0.0', f: '^1.0.0' },
      peerDependenciesMeta: { f: { optional: true } },
    }),
    'node_modules/d-linux': entry('1.1.0', { optional: true, os: ['linux'] }),
    'node_modules/e': entry('3.0.0', { devOptional: true }),
    'node_modules/f': entry('1.0.0', { dev: true }),
    'node_modules/g': entry('1.0.0', { os: ['darwin'] }),
    'node_modules/t': entry('9.0.0', { dev: true, dependencies: { f: '^1.0.0' } }),
  },
};

describe('resolveFrom', () => {
  it('looks in the package’s own node_modules, then each enclosing one up to the root', () => {
    expect(resolveFrom(repo.packages, 'node_modules/a', 'b')).toBe('node_modules/a/node_modules/b');
    expect(resolveFrom(repo.packages, 'node_modules/c', 'b')).toBe('node_modules/b');
    expect(resolveFrom(repo.packages, 'node_modules/a/node_modules/b', 'd')).toBe('node_modules/d');
    expect(resolveFrom(repo.packages, '', 'zz')).toBeNull();
  });
});

describe('prunedLockfile', () => {
  it('keeps what the dependencies reach, at the repo’s paths and versions, flagged for the unit', () => {
    const lock = prunedLockfile(repo, 'proxyplane-x', { a: '1.2.0' });
    expect(lock.packages['']).toEqual({ name: 'proxyplane-x', dependencies: { a: '1.2.0' } });
    expect(Object.keys(lock.packages)).toEqual([
      '',
      'node_modules/a',
      'node_modules/a/node_modules/b',
      'node_modules/d',
      'node_modules/d-linux',
      'node_modules/e',
      'node_modules/g',
    ]);
    expect(lock.packages['node_modules/a/node_modules/b']).toEqual(
      repo.packages['node_modules/a/node_modules/b'],
    );
    expect(lock.packages['node_modules/d-linux']).toEqual(repo.packages['node_modules/d-linux']);
    // A required peer is required in the unit, whatever the repo's flag; a package the repo requires
    // elsewhere but the unit reaches through optional edges only is optional (npm ci may skip it: darwin).
    expect(lock.packages['node_modules/e']).toEqual({ version: '3.0.0', integrity: 'sha512-3.0.0' });
    expect(lock.packages['node_modules/g']).toEqual({ ...repo.packages['node_modules/g'], optional: true });
    expect(lock).toMatchObject({ name: 'proxyplane-x', lockfileVersion: 3, requires: true });
  });

  it('refuses a tree it cannot lock as tested', () => {
    expect(() => prunedLockfile(repo, 'x', { a: '1.3.0' })).toThrow(
      /a@1\.3\.0 is not what package-lock.json installs \(1\.2\.0\)/,
    );
    expect(() => prunedLockfile(repo, 'x', { zz: '1.0.0' })).toThrow(/zz@1\.0\.0 is not what/);
    const holed = structuredClone(repo);
    delete holed.packages['node_modules/d'];
    expect(() => prunedLockfile(holed, 'x', { a: '1.2.0' })).toThrow(/has no d for node_modules\/a/);
    expect(() => prunedLockfile({ ...repo, lockfileVersion: 1 }, 'x', { a: '1.2.0' })).toThrow(/v2 or later/);
  });
});
