// Instantiates a for_each resource for one key, the way Terraform would, for the few expression forms the
// wiring uses: each.key / each.value.x (and a dynamic block's iterator), string literals, templates,
// local.x, base64encode(…), and references such as google_pubsub_topic.topic[each.value.topic].id.
// Anything else stays visibly unresolved, so a test never silently compares against a guess.

export interface Ref {
  /** "google_pubsub_topic.topic", "var.region", "local.push_mode", … */
  address: string;
  /** The instance key, for a reference into a for_each resource. */
  key?: unknown;
  /** The attribute path after the instance (".id", ".service_config[0].uri"). */
  attribute: string;
}

export class Unresolved {
  constructor(readonly expression: string) {}
}

export interface Scope {
  /** Iterators: each, or a dynamic block's name (event_trigger). */
  iterators: Record<string, { key: unknown; value: unknown }>;
  locals: Record<string, unknown>;
  /** Module outputs by module name (module.tables.x). */
  modules?: Record<string, Record<string, unknown>>;
}

const isRef = (v: unknown): v is Ref => typeof v === 'object' && v !== null && 'address' in v;

/** Splits "a${x}b${y}" into literal and expression parts, honouring nested braces and quotes. */
export function templateParts(text: string): { literal?: string; expression?: string }[] {
  const parts: { literal?: string; expression?: string }[] = [];
  let i = 0;
  while (i < text.length) {
    const start = text.indexOf('${', i);
    if (start < 0) {
      parts.push({ literal: text.slice(i) });
      break;
    }
    if (start > i) parts.push({ literal: text.slice(i, start) });
    let depth = 1;
    let j = start + 2;
    let quoted = false;
    for (; j < text.length && depth > 0; j++) {
      const c = text[j];
      if (c === '"' && text[j - 1] !== '\\') quoted = !quoted;
      else if (!quoted && c === '{') depth++;
      else if (!quoted && c === '}') depth--;
    }
    parts.push({ expression: text.slice(start + 2, j - 1) });
    i = j;
  }
  return parts;
}

function lookupPath(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split('.').filter(Boolean)) {
    if (current === null || typeof current !== 'object' || !(key in current)) return new Unresolved(path);
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function evaluateExpression(raw: string, scope: Scope): unknown {
  const expression = raw.trim();
  const literal = /^"([^"]*)"$/.exec(expression);
  if (literal) return literal[1];

  const iterator = /^(\w+)\.(key|value)((?:\.\w+)*)$/.exec(expression);
  if (iterator && iterator[1]! in scope.iterators) {
    const it = scope.iterators[iterator[1]!]!;
    return iterator[2] === 'key' ? it.key : lookupPath(it.value, iterator[3] ?? '');
  }

  const local = /^local\.(\w+)$/.exec(expression);
  if (local && local[1]! in scope.locals) return evaluate(scope.locals[local[1]!], scope);

  const moduleOutput = /^module\.(\w+)\.(\w+)$/.exec(expression);
  if (
    moduleOutput &&
    scope.modules?.[moduleOutput[1]!] &&
    moduleOutput[2]! in scope.modules[moduleOutput[1]!]!
  ) {
    return scope.modules[moduleOutput[1]!]![moduleOutput[2]!];
  }

  const base64 = /^base64encode\((.+)\)$/.exec(expression);
  if (base64) {
    const inner = evaluateExpression(base64[1]!, scope);
    return typeof inner === 'string'
      ? Buffer.from(inner, 'utf8').toString('base64')
      : new Unresolved(expression);
  }

  const indexed = /^([a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)\[(.+?)\]((?:\.\w+|\[\d+\])+)$/.exec(expression);
  if (indexed) {
    const key = evaluateExpression(indexed[2]!, scope);
    return key instanceof Unresolved ? key : { address: indexed[1]!, key, attribute: indexed[3]! };
  }

  const plain = /^([a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)((?:\.\w+|\[\d+\])*)$/.exec(expression);
  if (plain) return { address: plain[1]!, attribute: plain[2] ?? '' };

  return new Unresolved(expression);
}

/** Evaluates an hcl2json value (string template, list, object, scalar) in a scope. */
export function evaluate(value: unknown, scope: Scope): unknown {
  if (Array.isArray(value)) return value.map((v) => evaluate(v, scope));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, evaluate(v, scope)]));
  }
  if (typeof value !== 'string') return value;
  const parts = templateParts(value);
  if (parts.length === 1 && parts[0]?.expression !== undefined)
    return evaluateExpression(parts[0].expression, scope);
  let out = '';
  for (const part of parts) {
    if (part.literal !== undefined) {
      out += part.literal;
      continue;
    }
    const v = evaluateExpression(part.expression ?? '', scope);
    if (v instanceof Unresolved) return new Unresolved(value);
    out += isRef(v)
      ? `<${v.address}${v.key === undefined ? '' : `[${String(v.key)}]`}${v.attribute}>`
      : String(v);
  }
  return out;
}

export const refTo = (address: string, key: unknown, attribute: string): Ref => ({ address, key, attribute });
