import { describe, expect, it } from 'vitest';
import { proxyEndpoint, proxyUrl } from './endpoint.js';
import { type ProxyOptions, proxy } from './fixtures.unit.js';
import { isHealthy } from './health.js';

describe('isHealthy', () => {
  it.each<{ name: string; o: ProxyOptions; healthy: boolean }>([
    { name: 'Ready and Healthy=True', o: { phase: 'Ready', healthy: 'True' }, healthy: true },
    {
      name: 'Ready without a verdict (written before the first probe)',
      o: { phase: 'Ready', healthy: null },
      healthy: false,
    },
    { name: 'Provisioned, not probed yet', o: { phase: 'Provisioned' }, healthy: false },
    {
      name: 'Healthy=True on an instance being replaced',
      o: { phase: 'Provisioning', healthy: 'True' },
      healthy: false,
    },
    { name: 'Unhealthy', o: { phase: 'Unhealthy', healthy: 'False' }, healthy: false },
    { name: 'Healthy=False', o: { phase: 'Ready', healthy: 'False' }, healthy: false },
    { name: 'being deleted', o: { phase: 'Ready', healthy: 'True', deleting: true }, healthy: false },
    { name: 'Failed with a stale verdict', o: { phase: 'Failed', healthy: 'True' }, healthy: false },
    { name: 'external, Ready and Healthy=True', o: { external: true }, healthy: true },
    {
      name: 'external, its endpoint host edited since (a host no probe has dialled yet)',
      o: { external: true, ip: 'old-host.example' },
      healthy: false,
    },
  ])('$name → $healthy', ({ o, healthy }) => {
    expect(isHealthy(proxy('p', o))).toBe(healthy);
  });
});

describe('proxyEndpoint / proxyUrl', () => {
  it.each([
    { name: 'managed', o: {}, endpoint: { host: '10.0.0.1', port: 3128, protocol: 'http' } },
    { name: 'managed without ip', o: { ip: null }, endpoint: null },
    {
      name: 'external',
      o: { external: true },
      endpoint: { host: 'proxy.example', port: 8080, protocol: 'http' },
    },
    {
      name: 'external SOCKS5',
      o: { external: true, protocol: 'socks5' as const },
      endpoint: { host: 'proxy.example', port: 8080, protocol: 'socks5' },
    },
  ])('$name', ({ o, endpoint }) => {
    expect(proxyEndpoint(proxy('p', o))).toEqual(endpoint);
  });
  it.each([
    { creds: null, url: 'http://10.0.0.1:3128' },
    { creds: { username: 'user', password: 'pass' }, url: 'http://user:pass@10.0.0.1:3128' },
    { creds: { username: 'us@r', password: 'p:a/ss' }, url: 'http://us%40r:p%3Aa%2Fss@10.0.0.1:3128' },
    { creds: { username: 'u', password: 'p%20 #?' }, url: 'http://u:p%2520%20%23%3F@10.0.0.1:3128' },
  ])('credentials $creds → $url', ({ creds, url }) => {
    expect(proxyUrl({ host: '10.0.0.1', port: 3128, protocol: 'http' }, creds)).toBe(url);
    const parsed = new URL(url);
    expect(parsed.port).toBe('3128');
    // What a client decodes from the URL is exactly the stored username and password.
    if (creds) {
      expect(decodeURIComponent(parsed.username)).toBe(creds.username);
      expect(decodeURIComponent(parsed.password)).toBe(creds.password);
    }
  });
  it.each([
    { creds: null, url: 'socks5://203.0.113.7:1080' },
    { creds: { username: 'user', password: 'pass' }, url: 'socks5://user:pass@203.0.113.7:1080' },
    { creds: { username: 'us@r', password: 'p:a/ss' }, url: 'socks5://us%40r:p%3Aa%2Fss@203.0.113.7:1080' },
  ])('a SOCKS5 endpoint: credentials $creds → $url, encoded as for http', ({ creds, url }) => {
    expect(proxyUrl({ host: '203.0.113.7', port: 1080, protocol: 'socks5' }, creds)).toBe(url);
    const parsed = new URL(url);
    expect([parsed.protocol, parsed.hostname, parsed.port]).toEqual(['socks5:', '203.0.113.7', '1080']);
    if (creds) {
      expect(decodeURIComponent(parsed.username)).toBe(creds.username);
      expect(decodeURIComponent(parsed.password)).toBe(creds.password);
    }
  });
  it('brackets IPv6 hosts', () => {
    expect(proxyUrl({ host: '2001:db8::1', port: 1080, protocol: 'socks5' }, null)).toBe(
      'socks5://[2001:db8::1]:1080',
    );
    expect(proxyUrl({ host: '::1', port: 1, protocol: 'http' }, null)).toBe('http://[::1]:1');
  });
});
