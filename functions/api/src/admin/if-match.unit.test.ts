import { describe, expect, it } from 'vitest';
import { describeIfMatch, etagOf, ifMatchHolds, parseIfMatch, proxyTag } from './if-match.js';

describe('parseIfMatch', () => {
  it.each([
    ['*', { kind: 'any' }],
    [' \t* ', { kind: 'any' }],
    ['"7"', { kind: 'tags', tags: [{ weak: false, opaque: '7' }] }],
    [
      '"7", "8"',
      {
        kind: 'tags',
        tags: [
          { weak: false, opaque: '7' },
          { weak: false, opaque: '8' },
        ],
      },
    ],
    [
      ' "7" ,\t"8"\t',
      {
        kind: 'tags',
        tags: [
          { weak: false, opaque: '7' },
          { weak: false, opaque: '8' },
        ],
      },
    ],
    ['W/"7"', { kind: 'tags', tags: [{ weak: true, opaque: '7' }] }],
    // Empty list elements are accepted (RFC 9110 §5.6.1.2), as is a comma inside a tag (an etagc).
    [
      ', "7",, W/"8" ,',
      {
        kind: 'tags',
        tags: [
          { weak: false, opaque: '7' },
          { weak: true, opaque: '8' },
        ],
      },
    ],
    ['"a,b"', { kind: 'tags', tags: [{ weak: false, opaque: 'a,b' }] }],
    ['""', { kind: 'tags', tags: [{ weak: false, opaque: '' }] }],
  ])('%j', (raw, expected) => {
    expect(parseIfMatch(raw)).toEqual(expected);
  });

  it.each([
    ['', 'empty'],
    ['  ', 'only whitespace'],
    [',', 'no tag in the list'],
    ['7', 'unquoted'],
    ['"7', 'no closing quote'],
    ['"7" "8"', 'no comma between tags'],
    ['"7"x', 'junk after a tag'],
    ['w/"7"', 'lower-case weak prefix (W/ is case-sensitive)'],
    ['W/ "7"', 'space after W/'],
    ['*, "7"', '* in a list'],
    ['"7", *', '* in a list'],
    ['**', 'two stars'],
    ['"a b"', 'space inside a tag'],
    ['"a\u0001"', 'control character inside a tag'],
  ])('%j is malformed (%s)', (raw) => {
    expect(parseIfMatch(raw)).toBeNull();
  });
});

describe('ifMatchHolds', () => {
  const holds = (raw: string, revision: number) => ifMatchHolds(parseIfMatch(raw)!, String(revision));

  it('* holds for any existing proxy', () => {
    expect(holds('*', 1)).toBe(true);
    expect(holds('*', 42)).toBe(true);
  });

  it('a list holds when one strong tag is the generation', () => {
    expect(holds('"7"', 7)).toBe(true);
    expect(holds('"6", "7"', 7)).toBe(true);
    expect(holds('"7", "8"', 9)).toBe(false);
  });

  it('compares strongly: a weak tag never matches, and tags are compared octet by octet', () => {
    expect(holds('W/"7"', 7)).toBe(false);
    expect(holds('W/"7", "7"', 7)).toBe(true);
    expect(holds('"07"', 7)).toBe(false);
  });

  it('matches the ETag the API sends', () => {
    expect(etagOf(12)).toBe('"12"');
    expect(holds(etagOf(12), 12)).toBe(true);
  });

  it("a proxy's tag is its generation and its uid: one of the same name created again never matches", () => {
    const first = { generation: 1, uid: '0b5e2c1a-1111-4111-8111-000000000001' };
    const again = { generation: 1, uid: '0b5e2c1a-2222-4222-8222-000000000002' };
    expect(etagOf(proxyTag(first))).toBe('"1.0b5e2c1a-1111-4111-8111-000000000001"');
    const read = parseIfMatch(etagOf(proxyTag(first)))!;
    expect(ifMatchHolds(read, proxyTag(first))).toBe(true);
    expect(ifMatchHolds(read, proxyTag(again))).toBe(false);
    // The generation alone, as tags were before: no proxy's tag.
    expect(ifMatchHolds(parseIfMatch('"1"')!, proxyTag(first))).toBe(false);
  });
});

describe('describeIfMatch', () => {
  it('spells the tags as sent', () => {
    expect(describeIfMatch(parseIfMatch('"7", W/"8"')!)).toBe('"7" or W/"8"');
    expect(describeIfMatch(parseIfMatch('*')!)).toBe('*');
  });
});
