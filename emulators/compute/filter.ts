// The `filter` parameter of list and aggregatedList, as the Compute API documents it: AIP-160
// comparisons (`=`, `!=`, `<`, `>`, `<=`, `>=`, `:` and `:*` for presence) on dotted field paths
// (`labels.proxyplane-uid = "x"`), joined by AND, OR, NOT and juxtaposition
// (`(a = 1) (b = 2)`), with AIP-160 precedence (OR binds tighter than AND); or the older regular-
// expression form (`name eq 'vm-.*'`, `ne`), which must match the whole field and cannot be mixed
// with the first form. https://cloud.google.com/compute/docs/reference/rest/v1/instances/list

export type CompareOp = '=' | '!=' | '<' | '>' | '<=' | '>=' | ':' | 'eq' | 'ne';

export type FilterNode =
  | { kind: 'and'; items: FilterNode[] }
  | { kind: 'or'; items: FilterNode[] }
  | { kind: 'not'; item: FilterNode }
  | { kind: 'cmp'; path: string[]; op: CompareOp; value: string; quoted: boolean; regex?: RegExp };

export class FilterSyntaxError extends Error {
  readonly kind = 'filter_syntax';
}

const FIELD_CHAR = /[A-Za-z0-9_.-]/;
const SYMBOL_OPS: CompareOp[] = ['!=', '>=', '<=', '=', '<', '>', ':'];

class Parser {
  private pos = 0;
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
      this.pos++;
      const inner = this.expression();
      this.skipSpace();
      if (this.text[this.pos] !== ')') this.fail("missing ')'");
      this.pos++;
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
      try {
        cmp.regex = new RegExp(`^(?:${cmp.value})$`, 'u');
      } catch {
        throw new FilterSyntaxError(`invalid regular expression ${cmp.value}`);
      }
    } else aipForm++;
  });
  if (regexForm > 0 && aipForm > 0)
    throw new FilterSyntaxError('regular expressions cannot be mixed with other operators');
  return node;
}
