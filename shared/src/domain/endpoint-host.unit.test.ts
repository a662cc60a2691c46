import { describe, expect, it } from 'vitest';
import { isEndpointHost, refusedEndpointHost } from './endpoint-host.js';
import type { ProxySpec } from './proxy.js';

describe('isEndpointHost', () => {
  it.each([
    ['p.example.com', true],
    ['p.example.com.', true],
    ['localhost', true],
    ['proxy-1', true],
    ['203.0.113.7', true],
    ['2001:db8::1', true],
    ['::1', true],
    ['p.example.com:3128', false],
    ['http://p.example.com', false],
    ['u:pw@p.example.com', false],
    ['p example.com', false],
    ['[2001:db8::1]', false],
    ['-p.example.com', false],
    ['p..example.com', false],
    ['.', false],
    [`${'a'.repeat(64)}.example.com`, false],
  ])('%s → %s', (host, ok) => expect(isEndpointHost(host)).toBe(ok));
});

describe('refusedEndpointHost', () => {
  const external = (host: string) =>
    ({ mode: 'external', endpoint: { host, port: 3128 } }) as unknown as ProxySpec;
  it('refuses a bad host being set, keeps a stored one, ignores managed specs', () => {
    expect(refusedEndpointHost(external('p.example.com:3128'))).toBe('p.example.com:3128');
    expect(refusedEndpointHost(external('p.example.com'))).toBeNull();
    expect(refusedEndpointHost(external('bad host'), external('bad host'))).toBeNull();
    expect(refusedEndpointHost(external('bad host'), external('p.example.com'))).toBe('bad host');
    expect(refusedEndpointHost({ mode: 'managed' } as unknown as ProxySpec)).toBeNull();
  });
});
