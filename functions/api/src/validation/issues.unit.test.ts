import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ProxySpec } from '../../../../shared/src/domain/proxy.js';
import { toIssues } from './issues.js';

const issuesOf = (schema: z.ZodType, value: unknown) => {
  const r = schema.safeParse(value);
  if (r.success) throw new Error('expected a failure');
  return toIssues(r.error);
};

describe('toIssues', () => {
  it('gives one issue per unknown field, at its own path', () => {
    expect(
      issuesOf(ProxySpec, { mode: 'managed', zone: 'us-central1-a', a: 1, healthCheck: { b: 2 } }),
    ).toEqual(
      expect.arrayContaining([
        { path: 'a', code: 'unrecognized_key', message: 'unknown field' },
        { path: 'healthCheck.b', code: 'unrecognized_key', message: 'unknown field' },
      ]),
    );
  });

  it('reports a bad record key with the key rule, at the key', () => {
    expect(
      issuesOf(ProxySpec, { mode: 'managed', zone: 'us-central1-a', attributes: { '-x': 'v' } }),
    ).toEqual([
      { path: 'attributes.-x', code: 'invalid_key', message: 'attribute keys are 1-63 of [-_.a-zA-Z0-9]' },
    ]);
  });

  it('clips what the caller sent: long keys and long messages', () => {
    const key = 'k'.repeat(10_000);
    const [issue] = issuesOf(z.object({}).strict(), { [key]: 1 });
    expect(issue?.path.length).toBeLessThanOrEqual(65);
    const [long] = issuesOf(
      z.string().refine(() => false, 'm'.repeat(1000)),
      'x',
    );
    expect(long?.message.length).toBeLessThanOrEqual(201);
  });

  it('caps the number of issues', () => {
    const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`f${i}`, 1]));
    expect(issuesOf(z.object({}).strict(), many)).toHaveLength(20);
  });

  it('prefixes paths when asked', () => {
    expect(toIssues(z.string().safeParse(1).error!, ['spec', 'zone'])[0]?.path).toBe('spec.zone');
  });
});
