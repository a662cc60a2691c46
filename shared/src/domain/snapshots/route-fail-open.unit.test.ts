import { describe, expect, it } from 'vitest';
import { HEALTHY_CONDITIONS } from '../../testing/healthy-conditions.js';
import { aProxy, externalSpec } from '../../testing/proxy-fixtures.js';
import type { ProxyResource } from '../proxy.js';
import { failOpenRoutes } from './route-fail-open.js';

const NOW = new Date('2026-01-01T00:00:00Z');
const pool = (
  name: string,
  region: string,
  unreachableRoutes?: string[],
  over: Partial<ProxyResource> = {},
) =>
  aProxy({
    name,
    spec: externalSpec({ gatewayPool: true, attributes: { region } }),
    status: {
      phase: 'Ready',
      ip: '203.0.113.7',
      conditions: HEALTHY_CONDITIONS,
      ...(unreachableRoutes ? { unreachableRoutes } : {}),
    },
    ...over,
  });
const unhealthy = (p: ProxyResource): ProxyResource => ({
  ...p,
  status: { ...p.status, conditions: [] },
});
const routing: { name: string; selector: Record<string, string> }[] = [
  { name: 'shop', selector: {} },
  { name: 'eu-news', selector: { region: 'eu' } },
  { name: 'us-only', selector: { region: 'us' } },
];

describe('failOpenRoutes (TARGET tier, over the whole pool)', () => {
  it.each<[string, ProxyResource[], string[]]>([
    ['one proxy still reaches the route: no fail open', [pool('a', 'eu', ['shop']), pool('b', 'us')], []],
    [
      'every proxy unreachable for the route',
      [pool('a', 'eu', ['shop']), pool('b', 'us', ['shop'])],
      ['shop'],
    ],
    [
      'only the proxies the route selects count',
      [pool('a', 'eu', ['eu-news']), pool('b', 'us')],
      ['eu-news'],
    ],
    ['a route that selects no proxy is not failed', [pool('a', 'eu')], []],
    [
      'an unhealthy proxy is no way out for the route',
      [pool('a', 'eu', ['shop']), unhealthy(pool('b', 'us'))],
      ['shop'],
    ],
    [
      'nor is a proxy being deleted',
      [pool('a', 'eu', ['shop']), pool('b', 'us', undefined, { deletionRequestedAt: NOW })],
      ['shop'],
    ],
    [
      'nor is a cordoned proxy (no snapshot carries it)',
      [
        pool('a', 'eu', ['shop']),
        pool('b', 'us', undefined, { spec: externalSpec({ gatewayPool: true, cordoned: true }) }),
      ],
      ['shop'],
    ],
    ['several at once, sorted', [pool('a', 'eu', ['shop', 'eu-news'])], ['eu-news', 'shop']],
  ])('%s', (_n, proxies, expected) => {
    expect(failOpenRoutes(routing, proxies)).toEqual(expected);
  });
});
