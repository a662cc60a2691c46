import { describe, expect, it } from 'vitest';
import { aProxy } from '../testing/proxy-fixtures.js';
import { ProxyResource } from './proxy.js';
import { MAX_STORED_ISSUES, storedIssues } from './stored-issues.js';

const issuesOf = (doc: unknown) => {
  const r = ProxyResource.safeParse(doc);
  if (r.success) throw new Error('expected the document not to fit');
  return storedIssues(r.error);
};

describe('storedIssues', () => {
  it('names each field that fails, with its code, from the root of the document', () => {
    const proxy = aProxy();
    const issues = issuesOf({
      ...proxy,
      generation: 'three',
      spec: { ...proxy.spec, port: 70_000 },
      status: { ...proxy.status, phase: 'Sideways' },
    });
    expect(issues.map((i) => [i.path, i.code])).toEqual([
      ['generation', 'invalid_type'],
      ['spec.port', 'too_big'],
      ['status.phase', 'invalid_value'],
    ]);
    for (const i of issues) expect(i.message.length).toBeGreaterThan(0);
  });

  it('never repeats a stored value, whatever field it is in', () => {
    const secret = 'hunter2-Pa55-0f-the-0perator';
    const proxy = aProxy();
    const issues = issuesOf({
      ...proxy,
      uid: secret,
      generation: secret,
      spec: { ...proxy.spec, zone: secret, credentialsRef: { secret: `${secret}!` }, port: secret },
      status: { ...proxy.status, phase: secret, ip: 42 },
    });
    expect(issues.length).toBeGreaterThan(4);
    expect(JSON.stringify(issues)).not.toContain('hunter2');
  });

  it('lists an unknown key by its path, and stops at the limit', () => {
    const proxy = aProxy();
    const unknown = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`extra${i}`, i]));
    const issues = issuesOf({ ...proxy, spec: { ...proxy.spec, ...unknown } });
    expect(issues[0]).toEqual({ path: 'spec.extra0', code: 'unrecognized_key', message: 'unknown field' });
    expect(issues).toHaveLength(MAX_STORED_ISSUES);
  });
});
