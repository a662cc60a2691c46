// Loads a Terraform module's *.tf files through @cdktf/hcl2json and merges them into one object:
// blocks come back as one-element arrays and expressions as "${…}" strings (see the recipes, §6).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from '@cdktf/hcl2json';

export type Block = Record<string, unknown>;

export interface TfConfig {
  /** resource[type][name] = the block's attributes and nested blocks. */
  resource: Record<string, Record<string, Block>>;
  data: Record<string, Record<string, Block>>;
  variable: Record<string, Block>;
  output: Record<string, Block>;
  module: Record<string, Block>;
  /** Every locals block of every file, merged. */
  locals: Record<string, unknown>;
  /** Each file's raw parse, for scans over all text. */
  files: Record<string, Record<string, unknown>>;
}

type Parsed = Record<string, unknown>;

const firstOf = (blocks: unknown): Block =>
  Array.isArray(blocks) ? (blocks[0] as Block) : (blocks as Block);

function mergeNamed(target: Record<string, Block>, source: unknown): void {
  for (const [name, blocks] of Object.entries((source ?? {}) as Record<string, unknown>)) {
    target[name] = firstOf(blocks);
  }
}

export async function loadModule(dir: string): Promise<TfConfig> {
  const config: TfConfig = {
    resource: {},
    data: {},
    variable: {},
    output: {},
    module: {},
    locals: {},
    files: {},
  };
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.tf'))) {
    const parsed = (await parse(file, readFileSync(join(dir, file), 'utf8'))) as Parsed;
    config.files[file] = parsed;
    for (const kind of ['resource', 'data'] as const) {
      for (const [type, byName] of Object.entries((parsed[kind] ?? {}) as Record<string, unknown>)) {
        config[kind][type] ??= {};
        mergeNamed(config[kind][type], byName);
      }
    }
    mergeNamed(config.variable, parsed.variable);
    mergeNamed(config.output, parsed.output);
    mergeNamed(config.module, parsed.module);
    for (const block of (parsed.locals ?? []) as Record<string, unknown>[])
      Object.assign(config.locals, block);
  }
  return config;
}

export function resourceOf(config: TfConfig, type: string, name: string): Block {
  const block = config.resource[type]?.[name];
  if (!block) throw new Error(`no resource ${type}.${name}`);
  return block;
}

/** A nested block (blocks are one-element arrays in hcl2json's output). */
export function nested(block: Block, ...path: string[]): Block {
  let current: Block = block;
  for (const key of path) {
    const next = current[key];
    if (next === undefined) throw new Error(`no nested block ${path.join('.')}`);
    current = firstOf(next);
  }
  return current;
}

/** Every string in a parsed value, with the path that leads to it. */
export function* stringsIn(value: unknown, path: string[] = []): Generator<{ path: string[]; text: string }> {
  if (typeof value === 'string') {
    yield { path, text: value };
  } else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* stringsIn(item, [...path, String(i)]);
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) yield* stringsIn(item, [...path, key]);
  }
}
