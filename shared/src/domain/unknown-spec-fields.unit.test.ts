import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseWithoutUnknownSpecFields } from './unknown-spec-fields.js';

const Doc = z
  .object({
    name: z.string(),
    spec: z.object({ port: z.number(), check: z.object({ url: z.string() }).strict().optional() }).strict(),
  })
  .strict();

describe('parseWithoutUnknownSpecFields', () => {
  it('reads the spec without the fields it does not know, at any depth, leaving the value as it was', () => {
    const value = { name: 'a', spec: { port: 1, weight: 2, check: { url: 'u', tier: 'deep' } } };
    const copy = structuredClone(value);
    const parsed = parseWithoutUnknownSpecFields(Doc, value);
    expect(parsed.success && parsed.data).toEqual({ name: 'a', spec: { port: 1, check: { url: 'u' } } });
    expect(value).toEqual(copy);
  });

  it('still checks every field it knows beside an unknown one', () => {
    const parsed = parseWithoutUnknownSpecFields(Doc, { name: 'a', spec: { port: 'x', weight: 2 } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.path.join('.'))).toEqual(['spec.port']);
  });

  it('reads unknown fields away inside the elements of an array in the spec', () => {
    const WithList = z.object({
      spec: z.object({ items: z.array(z.object({ a: z.number() }).strict()) }).strict(),
    });
    const parsed = parseWithoutUnknownSpecFields(WithList, { spec: { items: [{ a: 1 }, { a: 2, b: 3 }] } });
    expect(parsed.success && parsed.data).toEqual({ spec: { items: [{ a: 1 }, { a: 2 }] } });
  });

  it('leaves an unknown field outside the spec to the schema', () => {
    const parsed = parseWithoutUnknownSpecFields(Doc, { name: 'a', spec: { port: 1 }, extra: true });
    expect(parsed.error?.issues).toEqual([
      expect.objectContaining({ code: 'unrecognized_keys', keys: ['extra'] }),
    ]);
  });
});
