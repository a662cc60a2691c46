// Evaluates a parsed filter against a resource as the API returns it (plain JSON).
import type { FilterNode } from './filter.js';

type Cmp = Extract<FilterNode, { kind: 'cmp' }>;

/** Every value at a dotted path; arrays on the way are flattened (`tags.items = x` = any item is x). */
function valuesAt(resource: unknown, path: readonly string[]): unknown[] {
  let current: unknown[] = [resource];
  for (const key of path) {
    const next: unknown[] = [];
    for (const value of current) {
      if (Array.isArray(value)) {
        for (const item of value) {
          if (item && typeof item === 'object' && key in item)
            next.push((item as Record<string, unknown>)[key]);
        }
      } else if (value && typeof value === 'object' && key in value) {
        next.push((value as Record<string, unknown>)[key]);
      }
    }
    current = next;
  }
  return current.flatMap((v) => (Array.isArray(v) ? v : [v])).filter((v) => v !== undefined && v !== null);
}

/** `=` on a scalar: the exact text, or the whole text against the value's `*` wildcards. */
function equals(value: unknown, cmp: Cmp): boolean {
  if (typeof value === 'object') return false;
  const text = String(value);
  return cmp.glob ? cmp.glob.testExact(text) : text === cmp.value;
}

const INTEGER = /^-?\d+$/;

function order(value: unknown, wanted: string): number | null {
  if (typeof value === 'object') return null;
  // ids are 64-bit integers carried as strings: compare them exactly
  if (INTEGER.test(String(value)) && INTEGER.test(wanted)) {
    const d = BigInt(String(value)) - BigInt(wanted);
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  }
  const a = Number(value);
  const b = Number(wanted);
  if (value !== '' && wanted !== '' && Number.isFinite(a) && Number.isFinite(b)) return a - b;
  const text = String(value);
  return text < wanted ? -1 : text > wanted ? 1 : 0;
}

function compare(resource: unknown, cmp: Cmp): boolean {
  const values = valuesAt(resource, cmp.path);
  switch (cmp.op) {
    case ':':
      if (cmp.value === '*' && !cmp.quoted) return values.some((v) => v !== '');
      return values.some((v) => (v && typeof v === 'object' ? Object.hasOwn(v, cmp.value) : equals(v, cmp)));
    case '=':
      return values.some((v) => equals(v, cmp));
    case '!=':
      return !values.some((v) => equals(v, cmp));
    case 'eq':
      return values.some((v) => typeof v !== 'object' && cmp.regex!.testExact(String(v)));
    case 'ne':
      return !values.some((v) => typeof v !== 'object' && cmp.regex!.testExact(String(v)));
    default: {
      const op = cmp.op;
      return values.some((v) => {
        const c = order(v, cmp.value);
        if (c === null) return false;
        return op === '<' ? c < 0 : op === '>' ? c > 0 : op === '<=' ? c <= 0 : c >= 0;
      });
    }
  }
}

export function matchesFilter(node: FilterNode | null, resource: unknown): boolean {
  if (node === null) return true;
  switch (node.kind) {
    case 'and':
      return node.items.every((item) => matchesFilter(item, resource));
    case 'or':
      return node.items.some((item) => matchesFilter(item, resource));
    case 'not':
      return !matchesFilter(node.item, resource);
    case 'cmp':
      return compare(resource, node);
  }
}
