import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { BUNDLE_DIR, bundledEntry } from './entry-bundle.js';

const run = promisify(execFile);

/** Removes what a test bundled from `dir`: the bundles are named after their entry's path. */
const removeBundlesOf = (dir: string) => {
  const tag = basename(dir);
  for (const f of readdirSync(BUNDLE_DIR))
    if (f.includes(tag)) rmSync(join(BUNDLE_DIR, f), { recursive: true, force: true });
};

/** A folder of sources inside the repo (test-artifacts/ is ignored), removed with what was bundled from it. */
async function inSources(prefix: string, body: (dir: string) => Promise<void>): Promise<void> {
  mkdirSync(join(repoRoot, 'test-artifacts'), { recursive: true });
  const dir = mkdtempSync(join(repoRoot, 'test-artifacts', prefix));
  try {
    await body(dir);
  } finally {
    removeBundlesOf(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('bundledEntry', () => {
  // Inside the repo, as every entry is (packages resolve from its node_modules); test-artifacts/ is ignored.
  // Made before the tests, not as they are collected: a filtered run collects them all.
  let dir = '';
  let entry = '';
  let lib = '';
  beforeAll(() => {
    mkdirSync(join(repoRoot, 'test-artifacts'), { recursive: true });
    dir = mkdtempSync(join(repoRoot, 'test-artifacts', 'bundle-sources-'));
    mkdirSync(join(dir, 'lib'));
    entry = join(dir, 'main.ts');
    lib = join(dir, 'lib', 'where.ts');
    writeFileSync(
      lib,
      [
        "import { createRequire } from 'node:module';",
        'export const where = { url: import.meta.url, dirname: import.meta.dirname, filename: import.meta.filename };',
        // Resolved from the source file's folder, as under tsx.
        "export const sibling = new URL('./data.json', import.meta.url).pathname;",
        "export const zod = createRequire(import.meta.url).resolve('zod');",
        'export const label: string = "first";',
      ].join('\n'),
    );
    writeFileSync(
      entry,
      [
        "import { z } from 'zod';",
        "import { label, sibling, where, zod } from './lib/where.js';",
        'console.log(JSON.stringify({ where, sibling, zod, label, parsed: z.number().parse(7) }));',
      ].join('\n'),
    );
  });
  const runBundle = async (file: string) =>
    JSON.parse((await run(process.execPath, [file], { cwd: dir })).stdout) as Record<string, unknown>;
  afterAll(() => {
    removeBundlesOf(dir);
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs with each module's import.meta as its source file's, npm packages left to Node", async () => {
    const file = await bundledEntry(entry);
    expect(file.startsWith(BUNDLE_DIR)).toBe(true);
    const out = await runBundle(file);
    expect(out.where).toEqual({ url: pathToFileURL(lib).href, dirname: join(dir, 'lib'), filename: lib });
    expect(out.sibling).toBe(join(dir, 'lib', 'data.json'));
    expect(out.parsed).toBe(7);
    // zod stays an import of the installed package, not a copy inside the bundle.
    expect(readFileSync(file, 'utf8')).toMatch(/from "zod"/);
    expect(out.zod).toMatch(/node_modules\/zod\//);
  });

  it('is built once while its sources stand, and again once one of them changes', async () => {
    const first = await bundledEntry(entry);
    expect(await bundledEntry(entry)).toBe(first);
    writeFileSync(lib, readFileSync(lib, 'utf8').replace('"first"', '"second"'));
    // A later mtime, however coarse the file system's clock.
    const later = new Date(Date.now() + 5_000);
    utimesSync(lib, later, later);
    const second = await bundledEntry(entry);
    expect(second).not.toBe(first);
    expect((await runBundle(second)).label).toBe('second');
  });

  it('fails with the compiler error on a source that does not compile', async () => {
    const broken = join(dir, 'broken.ts');
    writeFileSync(broken, 'export const x = ;\n');
    await expect(bundledEntry(broken)).rejects.toThrow(/broken\.ts/);
  });
});

describe('bundledEntry: the cache', () => {
  it("removes an entry's bundles and temporary folders last dated over an hour ago, and nothing else", async () => {
    await inSources('bundle-stale-', async (dir) => {
      const entry = join(dir, 'stale.ts');
      writeFileSync(entry, 'console.log(1);\n');
      const first = dirname(await bundledEntry(entry));
      const base = first.slice(0, first.lastIndexOf('-'));
      const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
      const oldBundle = `${base}-0000000000000000`;
      const recentBundle = `${base}-1111111111111111`;
      const oldTmp = `${base}-2222222222222222.123.abc.tmp`;
      // Other entries' bundles, one whose name starts with this entry's: theirs to remove. Both names hold
      // this test's folder name, so removeBundlesOf clears them whatever happens.
      const otherEntries = [
        join(BUNDLE_DIR, `other_${basename(dir)}-3333333333333333`),
        `${base}_more-4444444444444444`,
      ];
      for (const d of [oldBundle, recentBundle, oldTmp, ...otherEntries]) mkdirSync(d);
      for (const d of [oldBundle, oldTmp, ...otherEntries]) utimesSync(d, old, old);
      writeFileSync(entry, 'console.log(2);\n');
      const later = new Date(Date.now() + 5_000);
      utimesSync(entry, later, later);
      const second = dirname(await bundledEntry(entry));
      expect(second).not.toBe(first);
      expect([second, first, recentBundle, ...otherEntries].map((d) => existsSync(d))).toEqual([
        true,
        true,
        true,
        true,
        true,
      ]);
      expect([oldBundle, oldTmp].map((d) => existsSync(d))).toEqual([false, false]);
    });
  });

  it('keeps a dynamic import lazy, and names as the source has them', async () => {
    await inSources('bundle-lazy-', async (dir) => {
      const entry = join(dir, 'main.ts');
      // The lazily loaded module imports a package (CommonJS: require.cache tells whether it loaded).
      writeFileSync(
        join(dir, 'later.ts'),
        "import { SocksClient } from 'socks';\nexport const v = typeof SocksClient;\n",
      );
      // Two classes of one name in two modules: the bundle renames one, keepNames restores its name.
      writeFileSync(join(dir, 'a.ts'), 'export class Failure extends Error {}\n');
      writeFileSync(
        join(dir, 'b.ts'),
        'export class Failure extends Error {}\nexport const make = () => new Failure();\n',
      );
      writeFileSync(
        entry,
        [
          "import { Failure } from './a.js';",
          "import { make } from './b.js';",
          "console.log('main', new Failure().constructor.name, make().constructor.name);",
          "import { createRequire } from 'node:module';",
          "if (process.argv[2] === 'load') await import('./later.js');",
          'const cache = createRequire(import.meta.url).cache;',
          "console.log('socks', Object.keys(cache).some((k) => k.includes('/node_modules/socks/')));",
        ].join('\n'),
      );
      const file = await bundledEntry(entry);
      const out = async (...args: string[]) => (await run(process.execPath, [file, ...args])).stdout.trim();
      expect(await out()).toBe('main Failure Failure\nsocks false');
      expect(await out('load')).toBe('main Failure Failure\nsocks true');
    });
  });

  it('replaces a folder that lost one of its files, rather than start from it', async () => {
    await inSources('bundle-partial-', async (dir) => {
      const entry = join(dir, 'main.ts');
      writeFileSync(join(dir, 'later.ts'), "export const v = 'lazy';\n");
      writeFileSync(entry, "const { v } = await import('./later.js');\nconsole.log(v);\n");
      const file = await bundledEntry(entry);
      const folder = dirname(file);
      const chunks = readdirSync(folder).filter((f) => join(folder, f) !== file);
      expect(chunks.length).toBeGreaterThan(0);
      // Half removed (another runner's cleanup cut short), then asked for again after an edit elsewhere
      // made this process look again: the same content must come back whole.
      for (const c of chunks) rmSync(join(folder, c));
      const later = new Date(Date.now() + 5_000);
      utimesSync(entry, later, later);
      expect(await bundledEntry(entry)).toBe(file);
      expect((await run(process.execPath, [file])).stdout.trim()).toBe('lazy');
    });
  });

  it('runs the entry asked for, however many modules it imports lazily (each an entry point of its own)', async () => {
    await inSources('bundle-many-', async (dir) => {
      const lazy = Array.from({ length: 12 }, (_, i) => `lazy${i}`);
      for (const name of lazy) writeFileSync(join(dir, `${name}.ts`), `console.log('${name} ran');\n`);
      const entry = join(dir, 'main.ts');
      writeFileSync(
        entry,
        [
          "console.log('main ran');",
          ...lazy.map((n) => `if (process.argv[2] === '${n}') await import('./${n}.js');`),
        ].join('\n'),
      );
      const file = await bundledEntry(entry);
      expect((await run(process.execPath, [file])).stdout.trim()).toBe('main ran');
    });
  });
});
