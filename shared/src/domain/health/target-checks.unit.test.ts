import { describe, expect, it } from 'vitest';
import { RoutingRules } from '../../messages/gateway-snapshot.js';
import { targetChecksFor, targetKeysOf } from './target-checks.js';

const routes = RoutingRules.parse([
  {
    name: 'shop-de',
    match: { hosts: ['shop.example'] },
    selector: { country: 'de' },
    policy: 'round-robin',
    targetCheck: { url: 'https://shop.example/robots.txt' },
  },
  {
    name: 'news',
    match: { hosts: ['news.example'] },
    policy: 'round-robin',
    targetCheck: { url: 'http://news.example/', expectedStatus: 204 },
  },
  { name: 'plain', match: { hosts: ['*'] }, policy: 'round-robin' },
  {
    name: 'shop-us-fast',
    match: { hosts: ['shop.example'] },
    selector: { country: 'us', tier: 'fast' },
    policy: 'round-robin',
    targetCheck: { url: 'https://shop.example/' },
  },
]);

describe('targetChecksFor: the routes a gateway could pick the proxy for, with a check', () => {
  it.each<[string, Record<string, string>, string[]]>([
    ['no attributes: only the routes with an empty selector', {}, ['news']],
    ['a German proxy', { country: 'de' }, ['shop-de', 'news']],
    ['extra attributes do not matter', { country: 'de', tier: 'fast' }, ['shop-de', 'news']],
    ['every selector attribute must match', { country: 'us' }, ['news']],
    ['all of them', { country: 'us', tier: 'fast' }, ['news', 'shop-us-fast']],
    ['a value differing in case does not match', { country: 'DE' }, ['news']],
  ])('%s', (_name, attributes, expected) => {
    expect(targetChecksFor(routes, attributes).map((c) => c.route)).toEqual(expected);
  });

  it('carries the url and expected status (200 when not given)', () => {
    expect(targetChecksFor(routes, { country: 'de' })).toEqual([
      { route: 'shop-de', url: 'https://shop.example/robots.txt', expectedStatus: 200 },
      { route: 'news', url: 'http://news.example/', expectedStatus: 204 },
    ]);
  });

  it('no routes, no checks; a route without a check is never checked', () => {
    expect(targetChecksFor([], {})).toEqual([]);
    expect(targetChecksFor(routes.slice(2, 3), {})).toEqual([]);
  });

  it('targetKeysOf: the TARGET track keys those checks feed', () => {
    expect([...targetKeysOf(targetChecksFor(routes, { country: 'de' }))]).toEqual([
      'TARGET:shop-de',
      'TARGET:news',
    ]);
  });
});
