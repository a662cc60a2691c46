import { describe, expect, it } from 'vitest';
import { refusedHealthCheckUrl, urlCarriesCredentials } from './health-check-url.js';
import type { ProxySpec } from './proxy.js';

describe('urlCarriesCredentials', () => {
  it.each([
    ['http://alice:s3cret@target.example/health', true],
    ['https://:token@target.example/', true],
    ['http://alice@target.example/', true],
    ['HTTP://u:p@target.example', true],
    ['http://@target.example/', true],
    ['http://target.example/health', false],
    ['https://target.example/login?next=a@b', false],
    ['http://target.example/#frag@x', false],
    ['http://target.example/a@b', false],
    ['not a url', false],
  ])('%s → %s', (url, carries) => expect(urlCarriesCredentials(url)).toBe(carries));
});

describe('refusedHealthCheckUrl', () => {
  const spec = (url?: string) => ({ mode: 'managed', healthCheck: { url } }) as unknown as ProxySpec;
  const creds = 'http://u:pw@target.example/';
  it('refuses credentials being set, keeps a stored URL, ignores a spec without one', () => {
    expect(refusedHealthCheckUrl(spec(creds))).toBe(true);
    expect(refusedHealthCheckUrl(spec(creds), spec('http://target.example/'))).toBe(true);
    expect(refusedHealthCheckUrl(spec(creds), spec(creds))).toBe(false);
    expect(refusedHealthCheckUrl(spec('http://target.example/'))).toBe(false);
    expect(refusedHealthCheckUrl(spec())).toBe(false);
  });
});
