// The `filter` parameter of list and aggregatedList, as the Compute API documents it: AIP-160
// comparisons (`=`, `!=`, `<`, `>`, `<=`, `>=`, `:` and `:*` for presence) on dotted field paths
// (`labels.proxyplane-uid = "x"`), joined by AND, OR, NOT and juxtaposition
// (`(a = 1) (b = 2)`), with AIP-160 precedence (OR binds tighter than AND); or the older regular-
// expression form (`name eq 'vm-.*'`, `ne`), which must match the whole field and cannot be mixed
// with the first form. https://cloud.google.com/compute/docs/reference/rest/v1/instances/list
// Regular expressions are RE2, as on GCE: its syntax (no lookaround or backreferences, `(?i)` flags)
// and its linear-time matching, so no pattern can stall the process the emulator runs in.
import { RE2JS } from 're2js';

export type CompareOp = '=' | '!=' | '<' | '>' | '<=' | '>=' | ':' | 'eq' | 'ne';

export type FilterNode =
  | { kind: 'and'; items: FilterNode[] }
  | { kind: 'or'; items: FilterNode[] }
  | { kind: 'not'; item: FilterNode }
  | {
      kind: 'cmp';
      path: string[];
      op: CompareOp;
      value: string;
      quoted: boolean;
      /** `eq` / `ne`: the compiled expression */
      regex?: RE2JS;
      /** `=`, `!=`, `:` on a value with `*`: the wildcard pattern, compiled */
      glob?: RE2JS;
    };

export class FilterSyntaxError extends Error {
  readonly kind = 'filter_syntax';
}

const FIELD_CHAR = /[A-Za-z0-9_.-]/;
const SYMBOL_OPS: CompareOp[] = ['!=', '>=', '<=', '=', '<', '>', ':'];
/** Parentheses nest at most this deep: the parser recurses once per level, so a deeper filter would
 * overflow the stack (a RangeError, answered 500) instead of being refused as the 400 it is. */
export const MAX_FILTER_DEPTH = 64;

class Parser {
  private pos = 0;
  private depth = 0;
  constructor(private readonly text: string) {}

  parse(): FilterNode {
    const node = this.expression();
    this.skipSpace();
    if (this.pos < this.text.length) this.fail(`unexpected '${this.text[this.pos]}'`);
    return node;
  }

  private fail(why: string): never {
    throw new FilterSyntaxError(`${why} at offset ${this.pos}`);
  }

  private skipSpace(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }

  /** A keyword (AND, OR, NOT) standing alone as a word at the cursor. */
  private keyword(word: string): boolean {
    this.skipSpace();
    const end = this.pos + word.length;
    if (this.text.slice(this.pos, end) !== word) return false;
    const next = this.text[end];
    if (next !== undefined && !/[\s(]/.test(next)) return false;
    this.pos = end;
    return true;
  }

  private atSequenceEnd(): boolean {
    this.skipSpace();
    if (this.pos >= this.text.length || this.text[this.pos] === ')') return true;
    const rest = this.text.slice(this.pos);
    return /^(AND|OR)(?=[\s(]|$)/.test(rest);
  }

  private expression(): FilterNode {
    const items = [this.sequence()];
    while (this.keyword('AND')) items.push(this.sequence());
    return items.length === 1 ? items[0]! : { kind: 'and', items };
  }

  private sequence(): FilterNode {
    const items = [this.factor()];
    while (!this.atSequenceEnd()) items.push(this.factor());
    return items.length === 1 ? items[0]! : { kind: 'and', items };
  }

  private factor(): FilterNode {
    const items = [this.term()];
    while (this.keyword('OR')) items.push(this.term());
    return items.length === 1 ? items[0]! : { kind: 'or', items };
  }

  private term(): FilterNode {
    if (this.keyword('NOT')) return { kind: 'not', item: this.primary() };
    this.skipSpace();
    if (this.text[this.pos] === '-' && /[A-Za-z(]/.test(this.text[this.pos + 1] ?? '')) {
      this.pos++;
      return { kind: 'not', item: this.primary() };
    }
    return this.primary();
  }

  private primary(): FilterNode {
    this.skipSpace();
    if (this.text[this.pos] === '(') {
      if (++this.depth > MAX_FILTER_DEPTH) this.fail(`parentheses nested deeper than ${MAX_FILTER_DEPTH}`);
      this.pos++;
      const inner = this.expression();
      this.skipSpace();
      if (this.text[this.pos] !== ')') this.fail("missing ')'");
      this.pos++;
      this.depth--;
      return inner;
    }
    return this.comparison();
  }

  private comparison(): FilterNode {
    const start = this.pos;
    while (this.pos < this.text.length && FIELD_CHAR.test(this.text[this.pos]!)) this.pos++;
    const field = this.text.slice(start, this.pos);
    if (!/^[A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$/.test(field)) this.fail('expected a field name');
    this.skipSpace();
    const op = this.operator();
    this.skipSpace();
    const { value, quoted } = this.value();
    return { kind: 'cmp', path: field.split('.'), op, value, quoted };
  }

  private operator(): CompareOp {
    for (const op of SYMBOL_OPS) {
      if (this.text.startsWith(op, this.pos)) {
        this.pos += op.length;
        return op;
      }
    }
    for (const op of ['eq', 'ne'] as const) {
      if (this.text.startsWith(op, this.pos) && /\s/.test(this.text[this.pos + 2] ?? '')) {
        this.pos += 2;
        return op;
      }
    }
    return this.fail('expected an operator');
  }

  private value(): { value: string; quoted: boolean } {
    const quote = this.text[this.pos];
    if (quote === '"' || quote === "'") {
      let out = '';
      this.pos++;
      while (this.pos < this.text.length && this.text[this.pos] !== quote) {
        if (this.text[this.pos] === '\\' && this.pos + 1 < this.text.length) this.pos++;
        out += this.text[this.pos];
        this.pos++;
      }
      if (this.text[this.pos] !== quote) this.fail('unterminated string');
      this.pos++;
      return { value: out, quoted: true };
    }
    const start = this.pos;
    while (this.pos < this.text.length && !/[\s)]/.test(this.text[this.pos]!)) this.pos++;
    if (this.pos === start) this.fail('expected a value');
    return { value: this.text.slice(start, this.pos), quoted: false };
  }
}

/** RE2 refuses what GCE's RE2 refuses; `testExact` then matches the whole value. */
function compileRegex(pattern: string): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch {
    throw new FilterSyntaxError(`invalid regular expression ${pattern}`);
  }
}

/** `*` matches any run of characters (newlines too); everything else is literal. */
const compileGlob = (glob: string) => RE2JS.compile(`(?s)${glob.split('*').map(RE2JS.quote).join('.*')}`);

function visit(node: FilterNode, fn: (cmp: Extract<FilterNode, { kind: 'cmp' }>) => void): void {
  if (node.kind === 'cmp') fn(node);
  else if (node.kind === 'not') visit(node.item, fn);
  else for (const item of node.items) visit(item, fn);
}

/** Parses and checks a filter; `knownFields` are the resource's top-level field names. */
export function parseFilter(text: string, knownFields?: ReadonlySet<string>): FilterNode {
  const node = new Parser(text).parse();
  let regexForm = 0;
  let aipForm = 0;
  visit(node, (cmp) => {
    if (knownFields && !knownFields.has(cmp.path[0]!))
      throw new FilterSyntaxError(`unknown field ${cmp.path[0]}`);
    if (cmp.op === 'eq' || cmp.op === 'ne') {
      regexForm++;
      cmp.regex = compileRegex(cmp.value);
    } else {
      aipForm++;
      if (cmp.value.includes('*')) cmp.glob = compileGlob(cmp.value);
    }
  });
  if (regexForm > 0 && aipForm > 0)
    throw new FilterSyntaxError('regular expressions cannot be mixed with other operators');
  return node;
}
