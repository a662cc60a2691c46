// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Terraform expressions parse to "${…}" strings.
// The environment Terraform gives each deployable unit, with sample values, and what the unit's own config
// loader reads of it. Values: every `${…}` of the .tf files is evaluated with var defaults (or the required
// variables a tfvars must give) and a sample per resource attribute that Terraform only knows at apply (an
// e-mail, a self link, an address); an attribute without a sample throws, so nothing is compared against a
// guess. Reads: the unit's entry point names its loader (`load…Config`); the loader runs on a recording env.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Unit } from '../../../terraform/build/units.js';
import { templateParts } from './expr.js';
import { type Block, nested, resourceOf, type TfConfig } from './hcl.js';
import { repoRoot } from './paths.js';

export const SAMPLE_PROJECT = 'my-proxyplane';
export const SAMPLE_PROJECT_NUMBER = '123456789012';

/** The variables a terraform.tfvars must give (no default), as docs/deploy.md's example gives them. */
export const REQUIRED_VARIABLES: Record<string, unknown> = {
  project_id: SAMPLE_PROJECT,
  image_tag: 'v1',
  admin_emails: ['ops@example.com'],
};

/** A value of each secret kind in the format its variable description gives (values never live in .tf). */
export const SECRET_SAMPLES: Record<string, string> = {
  'discovery-tokens': `crawler-a:${'a'.repeat(32)}`,
  'admin-tokens': `ci:${'b'.repeat(32)}`,
  'gateway-clients': 'crawler-a:an0ther-s3cret',
};

/** Cloud Run sets these on every service and gen2 function (https://cloud.google.com/run/docs/container-contract). */
const platformEnv = (unit: Unit): Record<string, string> => ({
  PORT: '8080',
  K_SERVICE: unit.name,
  K_REVISION: `${unit.name}-00001-abc`,
  K_CONFIGURATION: unit.name,
  ...(unit.kind === 'function' ? { FUNCTION_TARGET: unit.name, FUNCTION_SIGNATURE_TYPE: 'cloudevent' } : {}),
});

const REF = /\b(?:(var|local)\.(\w+)|(data\.)?(google_\w+)\.(\w+)(\[(?:\*|"[^"]*"|\w+)\])?((?:\.\w+)*))/g;

function resourceSample(type: string, name: string, index: string, attribute: string): unknown {
  const id = name.replaceAll('_', '-');
  const key = `${type}${index}${attribute}`;
  switch (key) {
    case 'google_service_account.email':
      return `pp-${id}@${SAMPLE_PROJECT}.iam.gserviceaccount.com`;
    case 'google_compute_network.self_link':
      return `https://www.googleapis.com/compute/v1/projects/${SAMPLE_PROJECT}/global/networks/${id}`;
    case 'google_compute_address[*].address':
      return ['203.0.113.10', '203.0.113.11'];
    case 'google_project.number':
      return SAMPLE_PROJECT_NUMBER;
    case 'google_cloud_run_v2_service.uri':
      // What Cloud Run reports as the service's uri: the hashed URL, not the deterministic one.
      return `https://proxyplane-${id}-x7k2q3wz5a-uc.a.run.app`;
    default:
      throw new Error(`no sample for ${type}.${name}${index}${attribute}: add one to support/unit-env.ts`);
  }
}

export class TerraformValues {
  constructor(
    private readonly tf: TfConfig,
    private readonly vars: Record<string, unknown> = REQUIRED_VARIABLES,
  ) {}

  variable(name: string): unknown {
    if (name in this.vars) return this.vars[name];
    const v = this.tf.variable[name];
    if (!v) throw new Error(`no variable ${name}`);
    if (!('default' in v)) throw new Error(`variable ${name} has no default: give it in REQUIRED_VARIABLES`);
    return v.default;
  }

  local(name: string): unknown {
    if (!(name in this.tf.locals)) throw new Error(`no local ${name}`);
    return this.value(this.tf.locals[name]);
  }

  /** An hcl2json value (template string, list, object, scalar) with every expression evaluated. */
  value(v: unknown): unknown {
    if (Array.isArray(v)) return v.map((x) => this.value(x));
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, this.value(x)]));
    if (typeof v !== 'string') return v;
    const parts = templateParts(v);
    if (parts.length === 1 && parts[0]!.expression !== undefined)
      return this.expression(parts[0]!.expression);
    return parts
      .map((p) => (p.literal !== undefined ? p.literal : String(this.expression(p.expression!))))
      .join('');
  }

  /** The few HCL forms env values use (references, join, tostring, *, lists) are also JavaScript. */
  private expression(text: string): unknown {
    const values: unknown[] = [];
    const js = text.replace(REF, (_m, kind, name, _data, type, rname, index, attribute) => {
      values.push(
        kind === 'var'
          ? this.variable(name)
          : kind === 'local'
            ? this.local(name)
            : resourceSample(type, rname, index === '[*]' ? '[*]' : '', attribute),
      );
      return `__v[${values.length - 1}]`;
    });
    if (/[a-z_]+\.[a-z_]/.test(js.replace(/"[^"]*"/g, '')))
      throw new Error(`unresolved reference in ${text}`);
    const join = (sep: string, list: unknown[]) => list.join(sep);
    const tostring = (x: unknown) => String(x);
    return new Function('__v', 'join', 'tostring', `return (${js});`)(values, join, tostring);
  }
}

export interface UnitEnv {
  /** What Terraform sets: plain values, and secret-backed names with their secret kind. */
  plain: Record<string, string>;
  secrets: Record<string, string>;
}

const stringValue = (name: string, v: unknown): string => {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new Error(`env ${name} is not a string: ${JSON.stringify(v)}`);
};

/** The env Terraform gives a function (functions.tf) or a Cloud Run service (run.tf). */
export function terraformEnv(tf: TfConfig, values: TerraformValues, unit: Unit): UnitEnv {
  const strings = (o: unknown) =>
    Object.fromEntries(Object.entries(o as Record<string, unknown>).map(([k, v]) => [k, stringValue(k, v)]));
  if (unit.kind === 'function') {
    const service = nested(resourceOf(tf, 'google_cloudfunctions2_function', 'fn'), 'service_config');
    // The one form the tests know how to read; anything else must be taught here first.
    if (
      service.environment_variables !==
      '${merge(local.runtime_env, lookup(local.function_env, each.key, {}))}'
    )
      throw new Error(`unexpected environment_variables: ${String(service.environment_variables)}`);
    const own = (values.local('function_env') as Record<string, unknown>)[unit.name] ?? {};
    return {
      plain: strings({ ...(values.local('runtime_env') as object), ...(own as object) }),
      secrets: {},
    };
  }
  const container = nested(
    resourceOf(tf, 'google_cloud_run_v2_service', unit.name),
    'template',
    'containers',
  );
  if (container.env !== undefined)
    throw new Error(`${unit.name}: literal env blocks beside the dynamic ones`);
  const blocks = (container.dynamic as { env?: Block[] }).env ?? [];
  const plain: Record<string, string> = {};
  const secrets: Record<string, string> = {};
  for (const block of blocks) {
    const forEach = String(block.for_each);
    const merged = /^\$\{merge\(local\.runtime_env, local\.(\w+)\)\}$/.exec(forEach);
    const secret =
      /^\$\{\{ for name, kind in local\.(\w+_secret_env) : name => local\.secret_of_kind\[kind\]( if local\.secret_of_kind\[kind\] != null)? \}\}$/.exec(
        forEach,
      );
    if (merged) {
      Object.assign(plain, strings(values.local('runtime_env')), strings(values.local(merged[1]!)));
    } else if (secret) {
      const secretIds = values.variable('secrets') as Record<string, { kind: string }>;
      for (const [name, kind] of Object.entries(values.local(secret[1]!) as Record<string, string>)) {
        const present = Object.values(secretIds).some((s) => s.kind === kind);
        // Without the `if … != null` filter a missing secret is an apply error, not a missing variable.
        if (!present && !secret[2]) throw new Error(`${unit.name}: ${name} needs a "${kind}" secret`);
        if (present) secrets[name] = kind;
      }
    } else {
      throw new Error(`${unit.name}: unexpected env for_each ${forEach}`);
    }
  }
  return { plain, secrets };
}

/** The keys of `env` Terraform sets, and the full env the unit starts with on GCP (platform env included). */
export function deployedEnv(unit: Unit, env: UnitEnv): Record<string, string> {
  const fromSecrets = Object.fromEntries(
    Object.entries(env.secrets).map(([name, kind]) => [name, SECRET_SAMPLES[kind] ?? '']),
  );
  return { ...platformEnv(unit), ...env.plain, ...fromSecrets };
}

export interface Loaded {
  /** Every env key the loader looked at. */
  read: Set<string>;
  config?: unknown;
  error?: unknown;
}

/**
 * Runs the config loader the unit's entry point imports (`load…Config`), called as the entry calls it,
 * on `env` made process.env, recording every key it reads.
 */
export async function loadUnitConfig(unit: Unit, env: Record<string, string>): Promise<Loaded> {
  const entryPath = join(repoRoot, unit.entry);
  const source = readFileSync(entryPath, 'utf8');
  const found = [...source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)].flatMap((m) =>
    m[1]!
      .split(',')
      .map((n) => n.trim())
      .filter((n) => /^load\w*Config$/.test(n))
      .map((name) => ({ name, from: m[2]! })),
  );
  if (found.length !== 1)
    throw new Error(`${unit.entry}: expected one load…Config import, found ${found.length}`);
  const { name, from } = found[0]!;
  const module = (await import(
    pathToFileURL(join(dirname(entryPath), from.replace(/\.js$/, '.ts'))).href
  )) as Record<string, (...args: unknown[]) => unknown>;
  const call = new RegExp(`\\b${name}\\(([^)]*)\\)`).exec(
    source.slice(source.indexOf('}', source.indexOf(name))),
  );
  const args = call?.[1]?.trim();
  if (args !== '' && args !== 'process.env')
    throw new Error(`${unit.entry}: ${name}(${args ?? '?'}) is not a known call form`);

  const read = new Set<string>();
  const recording = new Proxy(
    { ...env },
    {
      get: (target, key) => {
        if (typeof key === 'string') read.add(key);
        return Reflect.get(target, key);
      },
      has: (target, key) => {
        if (typeof key === 'string') read.add(key);
        return Reflect.has(target, key);
      },
    },
  );
  const saved = { env: process.env, argv: process.argv };
  process.env = recording as NodeJS.ProcessEnv;
  process.argv = [saved.argv[0]!, entryPath]; // no flags: the deployed command line
  try {
    const config = args === '' ? module[name]!() : module[name]!(process.env);
    return { read, config };
  } catch (error) {
    return { read, error };
  } finally {
    process.env = saved.env;
    process.argv = saved.argv;
  }
}
