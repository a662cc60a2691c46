import { RE2JS } from 're2js';
import { describe, expect, it, vi } from 'vitest';
import { FilterSyntaxError, MAX_FILTER_DEPTH, parseFilter } from './filter.js';
import { matchesFilter } from './filter-match.js';

const vm = {
  name: 'pp-abc-1',
  status: 'RUNNING',
  id: '7000000000000000123',
  creationTimestamp: '2026-01-02T03:04:05.000Z',
  labels: { 'managed-by': 'proxyplane', 'proxyplane-uid': 'u-1', env: 'dev' },
  tags: { items: ['proxyplane-proxy', 'http'] },
  scheduling: { preemptible: false, automaticRestart: true },
  networkInterfaces: [{ networkIP: '127.0.0.2', accessConfigs: [{ natIP: '127.0.0.2' }] }],
};
const known = new Set(Object.keys(vm));

describe('parseFilter + matchesFilter', () => {
  it.each([
    ['labels.managed-by = proxyplane', true],
    ['labels.managed-by = "proxyplane"', true],
    ['labels.managed-by=proxyplane', true],
    ['labels.proxyplane-uid = "u-2"', false],
    ['labels.managed-by = proxyplane AND labels.proxyplane-uid = "u-1"', true],
    ['labels.managed-by = proxyplane AND labels.proxyplane-uid = "u-2"', false],
    ['(labels.managed-by = proxyplane) (labels.proxyplane-uid = "u-1")', true],
    ['(labels.managed-by = proxyplane) (labels.env = prod)', false],
    ['labels.env = prod OR labels.env = dev', true],
    ['(labels.env = prod) OR (labels.env = qa) AND (status = RUNNING)', false],
    ['(labels.env = prod) OR (labels.env = dev) AND (status = RUNNING)', true],
    ['NOT labels.env = dev', false],
    ['-labels.env = prod', true],
    ['labels.env != dev', false],
    ['labels.missing != x', true],
    ['labels.missing = x', false],
    ['labels.owner:*', false],
    ['labels.env:*', true],
    ['labels:env', true],
    ['tags.items = proxyplane-proxy', true],
    ['tags.items:http', true],
    ['tags.items = nope', false],
    ['scheduling.preemptible = false', true],
    ['scheduling.automaticRestart = true', true],
    ['name = "pp-*"', true],
    ['name = "xx-*"', false],
    ['id > 7000000000000000000', true],
    ['creationTimestamp < "2026-02-01T00:00:00Z"', true],
    ['creationTimestamp >= "2026-02-01T00:00:00Z"', false],
    ['networkInterfaces.networkIP = "127.0.0.2"', true],
    ["name eq 'pp-.*'", true],
    ['name eq pp-abc', false],
    ['name ne .*-1', false],
    ['(name eq pp-.*) (status eq RUN.*)', true],
    ['status = RUNNING labels.env = dev', true],
    // RE2 syntax, as GCE's: inline flags, POSIX classes, Perl classes (a quoted value unescapes once)
    ["name eq '(?i)PP-ABC-1'", true],
    ["name eq 'pp-[[:alpha:]]+-\\\\d'", true],
  ])('%s → %s', (filter, expected) => {
    expect(matchesFilter(parseFilter(filter, known), vm)).toBe(expected);
  });

  it.each([
    'labels.env =',
    '= x',
    '(labels.env = dev',
    'labels.env = "dev',
    'labels.env ~ dev',
    'unknownField = 1',
    '(name eq a) (status = RUNNING)',
    'name eq (',
    'labels.env = dev)',
    // what RE2 refuses, though JavaScript's RegExp takes it
    "name eq '(?=pp)pp-.*'",
    "name eq '(p)\\\\1.*'",
    "name eq 'p{1001}'",
    "name eq 'pp)|(x'",
  ])('rejects %s', (filter) => {
    expect(() => parseFilter(filter, known)).toThrow(FilterSyntaxError);
  });

  it(`takes parentheses nested ${MAX_FILTER_DEPTH} deep and refuses deeper as a syntax error`, () => {
    const nested = (depth: number) => `${'('.repeat(depth)}status = RUNNING${')'.repeat(depth)}`;
    expect(matchesFilter(parseFilter(nested(MAX_FILTER_DEPTH), known), vm)).toBe(true);
    expect(() => parseFilter(nested(MAX_FILTER_DEPTH + 1), known)).toThrow(FilterSyntaxError);
    // far deeper, or unclosed: refused before the recursion could overflow the stack (a RangeError)
    expect(() => parseFilter(nested(20_000), known)).toThrow(FilterSyntaxError);
    expect(() => parseFilter('('.repeat(20_000), known)).toThrow(FilterSyntaxError);
  });

  // Backtracking engines take exponential (regex) or polynomial (wildcards) time on these, stalling the
  // process the emulator shares with the local plane; RE2 is linear. That both are compiled by RE2 is
  // what is checked (a clock would be a timed test): for expressions the refusals above show it too.
  it.each([
    ["name eq '(a|a)*b'", 'regex', 28],
    ['name = "*a*a*a*a*a*a*b"', 'glob', 63],
  ] as const)(
    'compiles %s with RE2 (its %s), and matches a %i-character name',
    (filter, compiled, length) => {
      const node = parseFilter(filter, known);
      expect(node.kind === 'cmp' && node[compiled]).toBeInstanceOf(RE2JS);
      // ...and matched by it, not by a RegExp built again from the text.
      const re2 = vi.spyOn(RE2JS.prototype, 'testExact');
      try {
        expect(matchesFilter(node, { ...vm, name: 'a'.repeat(length) })).toBe(false);
        expect(matchesFilter(node, { ...vm, name: `${'a'.repeat(length)}b` })).toBe(true);
        expect(re2).toHaveBeenCalledTimes(2);
      } finally {
        re2.mockRestore();
      }
    },
  );
});
