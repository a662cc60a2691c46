import { describe, expect, it } from 'vitest';
import { inspectJson } from './json-guard.js';

const nest = (depth: number): unknown => JSON.parse('['.repeat(depth) + ']'.repeat(depth));

describe('inspectJson', () => {
  it.each([
    [{ name: 'a', spec: { mode: 'managed', cloudInit: { secretRef: { secret: 's' } } } }],
    [[1, 2, { a: [null, true] }]],
    ['just a string'],
    [null],
    [nest(16)],
    [{ pair: '\ud83d\ude00', text: 'h\u00e9llo' }],
  ])('accepts %j', (value) => {
    expect(inspectJson(value)).toBeNull();
  });

  it.each([
    ['{"__proto__": {"x": 1}}', '__proto__', 'forbidden_key'],
    ['{"spec": {"attributes": {"constructor": "x"}}}', 'spec.attributes.constructor', 'forbidden_key'],
    ['{"a": [{"prototype": 1}]}', 'a.0.prototype', 'forbidden_key'],
    ['"img\\ud800"', '', 'invalid_string'],
    ['{"spec": {"attributes": {"k": "\\ud800x"}}}', 'spec.attributes.k', 'invalid_string'],
    ['{"a": ["ok", "\\udc00"]}', 'a.1', 'invalid_string'],
    ['{"spec": {"attributes": {"\\udfffk": "v"}}}', 'spec.attributes.\ufffdk', 'invalid_string'],
  ])('refuses %s at %s', (json, path, code) => {
    expect(inspectJson(JSON.parse(json))).toMatchObject({ path, code });
  });

  it('refuses nesting past the limit without recursing', () => {
    expect(inspectJson(nest(17))?.code).toBe('too_deep');
    expect(inspectJson(nest(30_000))?.code).toBe('too_deep');
    expect(inspectJson({ a: { b: { c: 1 } } }, 2)).toMatchObject({ path: 'a.b', code: 'too_deep' });
  });
});
