// The environment variables as an operator meets them. references.test.ts checks that a variable a doc
// names is one the code reads; this checks the other direction: every variable a service's config loader
// reads is named in some doc (an undocumented one is a knob nobody knows of), and the variables Terraform
// hands each service are exactly those docs/operations.md § Settings lists. File reads and the Terraform
// module's parse only.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadModule, type TfConfig } from '../terraform/support/hcl.js';
import { repoRoot, terraformDir } from '../terraform/support/paths.js';
import { codeSpans, docPaths, readDoc } from './support/markdown.js';
import { codeFiles, repoFiles } from './support/repo.js';

const ENV = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/;

/** The files that read a service's environment: every config loader and the worker settings. */
const loaders = codeFiles(repoFiles(repoRoot)).filter(
  (f) =>
    /^functions\/[^/]+\/src\/(?:.+\/)?config\.ts$/.test(f) ||
    f === 'shared/src/config/env.ts' ||
    f === 'shared/src/domain/workers/settings.ts',
);

/** The names those files read: keys of their zod env schemas (`  NAME: z…`) and `env.NAME` reads. */
function readByCode(): Map<string, string> {
  const out = new Map<string, string>();
  for (const file of loaders) {
    const text = readFileSync(join(repoRoot, file), 'utf8');
    for (const m of text.matchAll(/^\s+([A-Z][A-Z0-9_]+)\??:/gm)) if (ENV.test(m[1]!)) out.set(m[1]!, file);
    for (const m of text.matchAll(/\benv\.([A-Z][A-Z0-9_]+)\b/g)) if (ENV.test(m[1]!)) out.set(m[1]!, file);
  }
  return out;
}

const docs = docPaths(repoRoot).map((p) => readDoc(repoRoot, p));
const docText = docs.flatMap((d) => d.lines.map((l) => l.text)).join('\n');
/** `RECONCILE_*_MS`-style spans: a family of variables named at once. */
const families = docs
  .flatMap((d) => d.lines.flatMap(codeSpans))
  .filter((s) => /^[A-Z][A-Z0-9_]*\*[A-Z0-9_*]*$/.test(s))
  .map((s) => new RegExp(`^${s.replace(/\*/g, '[A-Z0-9_]+')}$`));
const documented = (name: string) =>
  new RegExp(`(?<![A-Z0-9_])${name}(?![A-Z0-9_])`).test(docText) || families.some((f) => f.test(name));

/** docs/operations.md § Settings: the table's rows, each service's variables. */
function settingsTable(): Map<string, Set<string>> {
  const lines = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8').split('\n');
  const start = lines.indexOf('## Settings');
  const end = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  const rows = new Map<string, Set<string>>();
  for (const line of lines.slice(start, end)) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 4 || cells[1] === 'Service' || /^-+$/.test(cells[1]!)) continue;
    const names = [...cells[2]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!);
    rows.set(cells[1]!, new Set(names));
  }
  return rows;
}

describe('the environment an operator meets', () => {
  let tf: TfConfig;
  beforeAll(async () => {
    tf = await loadModule(terraformDir);
  });

  it('every variable a config loader reads is named in a doc', () => {
    const read = readByCode();
    // The scan works: a few names of every kind of loader.
    expect(read.size).toBeGreaterThan(80);
    for (const n of [
      'LOG_LEVEL',
      'GATEWAY_FETCH_TOKENS',
      'WORKER_REPORT_INTERVAL_SECONDS',
      'DISCOVERY_TOKENS',
    ])
      expect(read.has(n), n).toBe(true);
    const undocumented = [...read].filter(([n]) => !documented(n)).map(([n, f]) => `${n} (${f})`);
    expect(undocumented).toEqual([]);
  });

  it('operations.md § Settings lists exactly what Terraform sets for each service', () => {
    const l = tf.locals as Record<string, Record<string, unknown>>;
    const keys = (o: unknown) => Object.keys((o ?? {}) as object);
    const fnEnv = l.function_env as Record<string, object>;
    const script = readFileSync(join(terraformDir, 'scripts/gateway-connect-startup.sh'), 'utf8');
    const vm = [
      ...[...script.matchAll(/-e ([A-Z][A-Z0-9_]+)=/g)].map((m) => m[1]!),
      ...[...script.matchAll(/printf '([A-Z][A-Z0-9_]+)=/g)].map((m) => m[1]!),
    ];
    expect(vm).toContain('CONTROL_PLANE_URL');
    const wanted: Record<string, string[]> = {
      all: keys(l.runtime_env),
      ...Object.fromEntries(Object.entries(fnEnv).map(([fn, env]) => [fn, keys(env)])),
      API: [...keys(l.api_env), ...keys(l.api_secret_env)],
      gateway: [...keys(l.gateway_env), ...keys(l.gateway_secret_env)],
    };
    expect(wanted.all).toContain('LOG_LEVEL');
    const table = settingsTable();
    expect(Object.fromEntries([...table].map(([s, v]) => [s, [...v].sort()]))).toEqual(
      Object.fromEntries(Object.entries(wanted).map(([s, v]) => [s, [...new Set(v)].sort()])),
    );
    // The CONNECT gateway VMs get nothing the table does not list for the gateway or for all.
    const gatewayRow = new Set([...table.get('gateway')!, ...table.get('all')!]);
    expect(vm.filter((n) => !gatewayRow.has(n))).toEqual([]);
  });
});
