import { describe, expect, it } from 'vitest';
import { parseProxyQuery } from './query.js';

const parse = (qs: string) => parseProxyQuery(new URLSearchParams(qs));

describe('parseProxyQuery', () => {
  it.each([
    { qs: '', query: { attributes: {} } },
    { qs: 'attr.region=eu&attr.tier=gold', query: { attributes: { region: 'eu', tier: 'gold' } } },
    { qs: 'healthy=true', query: { attributes: {}, healthy: true } },
    { qs: 'healthy=false&phase=Ready', query: { attributes: {}, healthy: false, phase: 'Ready' } },
    { qs: 'attr.k=', query: { attributes: { k: '' } } },
  ])('accepts "$qs"', ({ qs, query }) => {
    const got = parse(qs);
    expect(got.ok && { ...got.query, attributes: { ...got.query.attributes } }).toEqual(query);
  });

  it.each([
    { qs: 'healthy=yes', param: 'healthy' },
    { qs: 'healthy=true&healthy=false', param: 'healthy' },
    { qs: 'attr.a=1&attr.a=2', param: 'attr.a' },
    { qs: 'attr.=x', param: 'attr.' },
    { qs: 'attr.__proto__=x', param: 'attr.__proto__' },
    { qs: 'attr.a b=x', param: 'attr.a b' },
    { qs: `attr.k=${'v'.repeat(257)}`, param: 'attr.k' },
    { qs: 'phase=ready', param: 'phase' },
    { qs: 'selector=x', param: 'selector' },
    { qs: Array.from({ length: 40 }, (_, i) => `attr.k${i}=v`).join('&'), param: 'attr.k34' },
  ])('rejects "$qs" naming $param', ({ qs, param }) => {
    const got = parse(qs);
    expect(got.ok).toBe(false);
    if (!got.ok) expect(got.param).toBe(param);
  });
});
