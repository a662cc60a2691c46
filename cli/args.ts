// Command-line parsing on node:util parseArgs: every command takes the global flags plus its own, and any
// unknown flag or missing argument is a UsageError (exit 2) before anything is sent.
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { UsageError } from './errors.js';

export const OUTPUTS = ['table', 'json', 'yaml', 'env', 'url'] as const;
export type Output = (typeof OUTPUTS)[number];

type Options = NonNullable<ParseArgsConfig['options']>;

export const GLOBAL_OPTIONS = {
  api: { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

/**
 * `proxyplane --api URL -o json proxies list`: the global flags that take a value may come before the
 * command too, as kubectl's and gcloud's do. They are moved behind it, where the command's own parser
 * reads them (and refuses them given twice). Anything else before the command is left where it is.
 */
export function hoistGlobalFlags(argv: string[]): string[] {
  const lead: string[] = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--api' || a === '--output' || a === '-o') {
      lead.push(...argv.slice(i, i + 2));
      i++;
    } else if (a.startsWith('--api=') || a.startsWith('--output=') || (a.startsWith('-o') && a.length > 2)) {
      lead.push(a);
    } else break;
  }
  // Only global flags (`proxyplane -o json`): no command, as with no arguments at all.
  if (i >= argv.length) return [];
  return [...argv.slice(i), ...lead];
}

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export function parseCommand(args: string[], options: Options): Parsed {
  const all: Options = { ...GLOBAL_OPTIONS, ...options };
  let parsed: ReturnType<typeof parseArgs<{ options: Options; tokens: true; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args, options: all, allowPositionals: true, strict: true, tokens: true });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/\. To specify a positional.*$/s, ''), {
      cause: err,
    });
  }
  // parseArgs keeps the last of a flag given twice; a global flag before the command is moved behind it
  // (hoistGlobalFlags) and so won instead: an alias's `--api` over the one typed after the command.
  const seen = new Set<string>();
  for (const t of parsed.tokens) {
    if (t.kind !== 'option' || all[t.name]?.multiple) continue;
    if (seen.has(t.name)) throw new UsageError(`--${t.name} given twice`);
    seen.add(t.name);
  }
  return { values: parsed.values as Parsed['values'], positionals: parsed.positionals };
}

export function outputOf(values: Parsed['values'], allowed: readonly Output[]): Output {
  const o = (values.output as string | undefined) ?? 'table';
  if (!(allowed as readonly string[]).includes(o)) {
    throw new UsageError(`--output must be one of ${allowed.join(', ')}, got "${o}"`);
  }
  return o as Output;
}

/**
 * A repeatable, comma-separated flag's items. Blank items between others are skipped (`a=1,,b=2`, a
 * trailing comma), but each time the flag is given it must hold one: `-l "$SELECTOR"` with the variable
 * unset sent `{"selector":{}}`, which leases a proxy of any pool, region or team, and exited 0 — and
 * `-l pool=prod -l "$REGION"` dropped the region filter the same way.
 */
function givenItems(raw: string[] | string | undefined, flag: string, what: string): string[] {
  const given = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  const split = given.map((s) => s.split(','));
  if (split.some((items) => items.every((i) => i.trim() === ''))) {
    throw new UsageError(`${flag} given with no ${what}: leave the flag out for none`);
  }
  return split.flat().filter((i) => i.trim() !== '');
}

const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * `k=v` pairs (repeatable flag, or comma-separated) into a map; duplicate keys are refused. Every comma
 * separates pairs, so a value holding one cannot be given here (docs/cli.md): `a=1,b` is refused, never
 * read as one value — a typo must not become a filter that matches nothing.
 */
export function keyValues(raw: string[] | string | undefined, flag: string): Record<string, string> {
  const items = givenItems(raw, flag, 'key=value pair');
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`${flag} takes key=value, got "${item}"`);
    const key = item.slice(0, eq).trim();
    // The API refuses these names (they would reach an object's prototype); `__proto__` was not even sent:
    // assigned on a plain object it set the prototype, so the filter or selector went out without it.
    if (RESERVED_KEYS.has(key)) throw new UsageError(`${flag}: "${key}" is not a key the API accepts`);
    if (Object.hasOwn(out, key)) throw new UsageError(`${flag}: "${key}" given twice`);
    // Trimmed as the key is: `-l "pool = demo"` sent " demo", which no proxy carries (no_match).
    out[key] = item.slice(eq + 1).trim();
  }
  return out;
}

/** One of `allowed` per item (repeatable flag, or comma-separated), in order; duplicates are refused. */
export function oneOfEach<T extends string>(
  raw: string[] | string | undefined,
  flag: string,
  allowed: readonly T[],
): T[] {
  const items = givenItems(raw, flag, 'value');
  const out: T[] = [];
  for (const item of items.map((s) => s.trim())) {
    if (!(allowed as readonly string[]).includes(item)) {
      throw new UsageError(`${flag} must be one of ${allowed.join(', ')}, got "${item}"`);
    }
    if (out.includes(item as T)) throw new UsageError(`${flag}: "${item}" given twice`);
    out.push(item as T);
  }
  return out;
}

export function exactlyOne(positionals: string[], what: string): string {
  if (positionals.length !== 1) {
    throw new UsageError(
      positionals.length === 0 ? `missing ${what}` : `expected one ${what}, got ${positionals.length}`,
    );
  }
  return positionals[0]!;
}

export function none(positionals: string[]): void {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
}

/** `max` bounds a value that becomes a timer or a loop (Node's timers fire at once past 2^31-1 ms). */
export function positiveInt(
  raw: string | undefined,
  flag: string,
  fallback: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw new UsageError(
      max === Number.MAX_SAFE_INTEGER
        ? `${flag} must be a positive integer, got "${raw}"`
        : `${flag} must be an integer from 1 to ${max}, got "${raw}"`,
    );
  }
  return Number(raw);
}
