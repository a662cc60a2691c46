import { describe, expect, it } from 'vitest';
import { findDuplicateKey } from './duplicate-keys.js';

describe('findDuplicateKey', () => {
  it.each([
    ['a top-level key', '{"name":"p4","name":"p5"}', ['name']],
    ['a key of a nested object', '{"spec":{"capacity":1,"zone":"z","capacity":500}}', ['spec', 'capacity']],
    ['a key of an object in an array', '{"a":[{"x":1},{"y":1,"y":2}]}', ['a', 1, 'y']],
    ['a key of an array in an array', '[[0],[1,{"k":1,"k":1}]]', [1, 1, 'k']],
    ['equal keys written with escapes', '{"a":1,"\\u0061":2}', ['a']],
    ['equal keys both escaped differently', '{"\\u00e9":1,"é":2}', ['é']],
    ['a key with an escaped quote in it', '{"a\\"b":1,"a\\u0022b":2}', ['a"b']],
    ['keys after a string ending in a backslash', '{"s":"x\\\\","t":1,"t":2}', ['t']],
    ['the empty key', '{"":1,"":2}', ['']],
    ['with whitespace everywhere', ' {\n "a" : 1 ,\r\n\t"a" : 2 } ', ['a']],
    ['after a nested object closed', '{"a":{"b":1},"c":2,"a":3}', ['a']],
  ])('finds %s', (_, text, path) => {
    expect(() => JSON.parse(text)).not.toThrow();
    expect(findDuplicateKey(text)).toEqual({ path });
  });

  it.each([
    ['distinct keys', '{"a":1,"b":{"a":1,"b":2}}'],
    ['the same keys in sibling objects of an array', '[{"name":"a","x":1},{"name":"b","x":2}]'],
    ['the same key in a parent and its child', '{"a":{"a":{"a":1}}}'],
    ['a key name inside a string value', '{"a":"\\"a\\":1","b":"{\\"a\\":2, \\"a\\":3}"}'],
    ['an array of strings equal to a key', '{"a":["a","a"]}'],
    ['keys that differ only in case or escapes of other characters', '{"a":1,"A":2,"\\u0062":3}'],
    ['scalars and empty containers', '[1,-2.5e3,true,false,null,{},[],""]'],
    ['a bare string', '"a"'],
  ])('finds nothing in %s', (_, text) => {
    expect(() => JSON.parse(text)).not.toThrow();
    expect(findDuplicateKey(text)).toBeNull();
  });

  // How fast it is belongs to a benchmark, not a timed test (a shared machine's stalls would fail it).
  it('scans a body past the 64 KiB limit, of many keys and long escaped strings, to the end', () => {
    const keys = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, 'x'.repeat(20)]));
    const text = JSON.stringify({ a: keys, b: 'y\\"'.repeat(5000) });
    expect(text.length).toBeGreaterThan(60_000);
    expect(findDuplicateKey(text)).toBeNull();
    expect(findDuplicateKey(`${text.slice(0, -1)},"a":1}`)).toEqual({ path: ['a'] });
  });

  it('does not loop on text that is not JSON (an unclosed string)', () => {
    expect(findDuplicateKey('{"a')).toBeNull();
  });
});
