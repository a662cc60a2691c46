// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// The build step that feeds Terraform (dist/functions/<name>) and the images (dist/services/<name>):
// a built unit must run from its own folder with nothing but the packages its package.json names.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';
import { type BuiltUnit, buildSources } from '../../terraform/build/build-sources.js';
import { packageOf } from '../../terraform/build/closure.js';
import { listUnits, unitOutputDir } from '../../terraform/build/units.js';
import { loadModule } from './support/hcl.js';
import { repoRoot, terraformDir } from './support/paths.js';

describe('packageOf', () => {
  it.each([
    ['hono', 'hono'],
    ['hono/utils/http', 'hono'],
    ['@hono/node-server', '@hono/node-server'],
    ['@google-cloud/functions-framework/testing', '@google-cloud/functions-framework'],
    ['node:fs', null],
    ['fs/promises', null],
  ])('%s → %s', (specifier, expected) => {
    expect(packageOf(specifier)).toBe(expected);
  });
});

describe('units', () => {
  it('are the rows of functions.json plus the Cloud Run services, built where Terraform zips them', async () => {
    const units = listUnits(repoRoot);
    const table = JSON.parse(readFileSync(join(repoRoot, 'shared/topology/functions.json'), 'utf8'));
    expect(units.filter((u) => u.kind === 'function').map((u) => u.name)).toEqual(
      Object.keys(table.functions),
    );
    const tf = await loadModule(terraformDir);
    expect(tf.locals.function_dist_dir).toBe(`\${path.module}/../dist/${unitOutputDir.function}`);
    expect(tf.data.archive_file?.function?.source_dir).toBe('${local.function_dist_dir}/${each.key}');
    // The images are built per Cloud Run service the same way (terraform/images/Dockerfile).
    expect(readFileSync(join(terraformDir, 'images/Dockerfile'), 'utf8')).toContain(
      `/out/${unitOutputDir.service}/`,
    );
  });
});

describe('a built service', () => {
  let out: string;
  let built: BuiltUnit;
  let child: ChildProcess | undefined;

  beforeAll(() => {
    out = mkdtempSync(join(tmpdir(), 'proxyplane-dist-'));
    [built] = buildSources({ out, only: ['api'] }) as [BuiltUnit];
  }, 120_000);

  afterAll(() => {
    if (child?.pid && child.exitCode === null) child.kill('SIGTERM');
    rmSync(out, { recursive: true, force: true });
  });

  it('names exactly the packages it imports (and their peers), pinned to the installed versions', () => {
    const manifest = JSON.parse(readFileSync(join(built.outDir, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ type: 'module', main: 'functions/api/src/main.js' });
    expect(Object.keys(manifest.dependencies)).toEqual([
      '@hono/node-server',
      '@hono/zod-openapi',
      'hono',
      'zod',
    ]);
    const installedHono = JSON.parse(readFileSync(join(repoRoot, 'node_modules/hono/package.json'), 'utf8'));
    expect(manifest.dependencies.hono).toBe(installedHono.version);
  });

  it('starts from its own folder (`node .`, as in the image) and answers /healthz', async () => {
    // What `npm install` would provide in the image; the repo's node_modules holds the same versions.
    symlinkSync(join(repoRoot, 'node_modules'), join(built.outDir, 'node_modules'), 'dir');
    const port = await freePort();
    child = spawn(process.execPath, ['.'], {
      cwd: built.outDir,
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', K_REVISION: 'built-test' },
      stdio: 'ignore',
    });
    const deadline = Date.now() + 20_000;
    let body: unknown;
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        body = await res.json();
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(body).toEqual({ ok: true, version: 'built-test' });
  });
});
