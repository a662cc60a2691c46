// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// The build step that feeds Terraform (dist/functions/<name>) and the images (dist/services/<name>):
// a built unit must run from its own folder with nothing but the packages its package.json names.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
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

// What `npm install` provides in the image or the function build; the repo's node_modules holds the same
// versions the manifests pin.
const linkModules = (dir: string) =>
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');

async function poll<T>(what: string, attempt: () => Promise<T>, log: () => string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: ${String(err)}\nstderr:\n${log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function start(
  cwd: string,
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; stderr: () => string } {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  children.push(child);
  return { child, stderr: () => stderr };
}

const children: ChildProcess[] = [];
const probeBuilt = existsSync(join(repoRoot, 'functions/probe/src/index.ts'));

describe('built units', () => {
  let out: string;
  const built = new Map<string, BuiltUnit>();

  beforeAll(() => {
    out = mkdtempSync(join(tmpdir(), 'proxyplane-dist-'));
    for (const unit of buildSources({ out, only: probeBuilt ? ['api', 'probe'] : ['api'] })) {
      built.set(unit.name, unit);
    }
  }, 120_000);

  afterAll(() => {
    for (const child of children) if (child.pid && child.exitCode === null) child.kill('SIGTERM');
    rmSync(out, { recursive: true, force: true });
  });

  it('name only runtime packages they import (and their peers), pinned to the installed versions', () => {
    const root = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
    for (const unit of built.values()) {
      const manifest = JSON.parse(readFileSync(join(unit.outDir, 'package.json'), 'utf8'));
      expect(manifest).toMatchObject({ type: 'module', main: unit.main });
      const names = Object.keys(manifest.dependencies);
      for (const name of names) {
        expect(
          Object.keys(root.dependencies),
          `${unit.name}: ${name} must be a runtime dependency`,
        ).toContain(name);
        const installed = JSON.parse(
          readFileSync(join(repoRoot, 'node_modules', name, 'package.json'), 'utf8'),
        );
        expect(manifest.dependencies[name]).toBe(installed.version);
      }
      expect(names.filter((n) => n in (root.devDependencies ?? {}))).toEqual([]);
    }
    // api's main.ts serves with @hono/node-server; @hono/zod-openapi brings its peers hono and zod.
    expect(Object.keys(built.get('api')!.dependencies)).toEqual(
      expect.arrayContaining(['@hono/node-server', '@hono/zod-openapi', 'hono', 'zod']),
    );
  });

  it("carry the repo's allowScripts for the packages their lock installs, and only those", () => {
    const root = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
    for (const unit of built.values()) {
      const manifest = JSON.parse(readFileSync(join(unit.outDir, 'package.json'), 'utf8'));
      const lock = JSON.parse(readFileSync(join(unit.outDir, 'package-lock.json'), 'utf8'));
      const scripted = Object.entries(lock.packages as Record<string, { hasInstallScript?: boolean }>)
        .filter(([, e]) => e.hasInstallScript)
        .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
      // Every install script a unit's npm ci meets is one the repo reviewed — and named for it.
      for (const name of scripted)
        expect(root.allowScripts, `${unit.name}: ${name}`).toHaveProperty(name, true);
      expect(Object.keys(manifest.allowScripts ?? {}).sort()).toEqual([...new Set(scripted)].sort());
    }
    // Not vacuous: the Google clients' gRPC stack brings protobufjs, whose postinstall npm 11.16+ asks about.
    const api = JSON.parse(readFileSync(join(built.get('api')!.outDir, 'package.json'), 'utf8'));
    expect(api.allowScripts).toEqual({ protobufjs: true });
  });

  it('carry a lockfile: the repo lock’s entries for what they reach, complete for npm', () => {
    const repoLock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8'));
    for (const unit of built.values()) {
      const lock = JSON.parse(readFileSync(join(unit.outDir, 'package-lock.json'), 'utf8'));
      expect(lock.packages['']).toEqual({ name: `proxyplane-${unit.name}`, dependencies: unit.dependencies });
      const paths = Object.keys(lock.packages).filter((p) => p !== '');
      // Transitive packages too (the gRPC stack under the Google clients), each as the repo installs it.
      expect(paths.length).toBeGreaterThan(Object.keys(unit.dependencies).length);
      for (const path of paths) {
        const {
          dev: _dev,
          devOptional: _devOptional,
          optional: _optional,
          ...repoEntry
        } = repoLock.packages[path];
        const { optional: _o, ...entry } = lock.packages[path];
        expect(entry, `${unit.name}: ${path}`).toEqual(repoEntry);
      }
      // npm's own check: every package the tree needs is in the lock at a version that satisfies it.
      expect(() =>
        execFileSync('npm', ['ls', '--all', '--package-lock-only'], { cwd: unit.outDir, stdio: 'pipe' }),
      ).not.toThrow();
    }
    expect(
      Object.keys(
        JSON.parse(readFileSync(join(built.get('api')!.outDir, 'package-lock.json'), 'utf8')).packages,
      ),
    ).toContain('node_modules/@grpc/grpc-js');
  });

  it('a service starts from its own folder (`node .`, as in the image) and answers /healthz', async () => {
    const api = built.get('api')!;
    linkModules(api.outDir);
    const port = await freePort();
    // The API refuses to start without an admin credential; the emulators come from the global setup.
    const proc = start(api.outDir, ['.'], {
      PORT: String(port),
      HOST: '127.0.0.1',
      K_REVISION: 'built-test',
      ADMIN_TOKENS: 'ci:a-long-enough-admin-token-for-the-test',
      DISCOVERY_TOKENS: 'ci:a-long-enough-crawler-token-for-the-test',
    });
    const body = await poll(
      'the built api answering /healthz',
      async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).json(),
      proc.stderr,
    );
    expect(body).toMatchObject({ ok: true, version: 'built-test' });
  });

  it.skipIf(!probeBuilt)(
    'a function is served by functions-framework from its own folder and acks a poison push',
    async () => {
      const probe = built.get('probe')!;
      const manifest = JSON.parse(readFileSync(join(probe.outDir, 'package.json'), 'utf8'));
      expect(manifest.scripts).toBeUndefined(); // functions-framework starts it, not a start script
      expect(Object.keys(manifest.dependencies)).toContain('@google-cloud/functions-framework');
      linkModules(probe.outDir);
      const port = await freePort();
      // What the Cloud Functions runtime runs: functions-framework with the deployed entry point, source = the folder.
      const proc = start(
        probe.outDir,
        [
          'node_modules/@google-cloud/functions-framework/build/src/main.js',
          '--target=probe',
          `--port=${port}`,
        ],
        {
          GOOGLE_CLOUD_PROJECT: 'demo-built-probe',
        },
      );
      // A push body whose data is not a tick: the handler must acknowledge it (2xx), never crash or nack.
      const poison = {
        subscription: 'projects/demo-built-probe/subscriptions/probe-push',
        message: { data: Buffer.from('{"not":"a tick"}').toString('base64'), messageId: 'poison-1' },
      };
      const res = await poll(
        'the built probe function answering a push',
        () =>
          fetch(`http://127.0.0.1:${port}/projects/demo-built-probe/topics/ticks-probe`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(poison),
          }),
        proc.stderr,
      );
      expect(res.status, proc.stderr()).toBe(204);
    },
  );
});
