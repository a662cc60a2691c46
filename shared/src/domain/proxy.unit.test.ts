import { describe, expect, it } from 'vitest';
import { ProxyName, ProxySpec } from './proxy.js';

describe('ProxySpec', () => {
  it('fills defaults for a minimal managed spec', () => {
    const spec = ProxySpec.parse({ mode: 'managed', zone: 'us-central1-a' });
    expect(spec).toMatchObject({
      provider: 'gce',
      port: 3128,
      capacity: 4,
      attributes: {},
      gatewayPool: false,
      cordoned: false,
    });
    expect(spec.healthCheck).toMatchObject({ intervalSeconds: 30, successThreshold: 1, failureThreshold: 3 });
  });

  it.each([
    [{ mode: 'managed', zone: 'us-central1-a', extra: 1 }, 'unknown field'],
    [{ mode: 'external', endpoint: { host: 'h' } }, 'missing port'],
    [{ mode: 'sideways' }, 'unknown mode'],
    [{ mode: 'managed', zone: 'nowhere' }, 'bad zone'],
    [{ mode: 'managed', zone: 'us-central1-a', credentialsRef: { secret: 'a/b' } }, 'bad secret id'],
    [{ mode: 'external', endpoint: { host: 'h', port: 1080, protocol: 'socks4' } }, 'unknown protocol'],
    [
      { mode: 'external', endpoint: { host: 'h', port: 1080, protocol: 'SOCKS5' } },
      'protocols are lower case',
    ],
  ] as Array<[unknown, string]>)('rejects %j (%s)', (input) => {
    expect(ProxySpec.safeParse(input).success).toBe(false);
  });
});

describe('endpoint protocol', () => {
  it.each([
    [{ host: 'h', port: 3128 }, 'http'],
    [{ host: 'h', port: 3128, protocol: 'http' }, 'http'],
    [{ host: 'h', port: 1080, protocol: 'socks5' }, 'socks5'],
  ])('an external endpoint %j speaks %s', (endpoint, protocol) => {
    const spec = ProxySpec.parse({ mode: 'external', endpoint });
    expect(spec.mode === 'external' && spec.endpoint.protocol).toBe(protocol);
  });
});

describe('ProxyName', () => {
  it.each(['a', 'proxy-1', 'x'.repeat(63)])('accepts %s', (n) =>
    expect(ProxyName.safeParse(n).success).toBe(true),
  );
  it.each(['', '1abc', 'Abc', 'a_b', 'a-', 'x'.repeat(64), '../etc'])('rejects %s', (n) =>
    expect(ProxyName.safeParse(n).success).toBe(false),
  );
});
