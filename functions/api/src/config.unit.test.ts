import { describe, expect, it } from 'vitest';
import { loadApiConfig } from './config.js';
import { DEFAULT_AUTH_FAILURE_RATE } from './middleware/auth-failure-limit.js';
import { CALLER_CLASSES, DEFAULT_CALLER_RATES, rateEnvName } from './middleware/caller-rate-limit.js';

const tokens = { ADMIN_TOKENS: 'ci:0123456789abcdef0123456789abcdef' };

describe('MANAGED_PROXY_PORTS: the ports a managed proxy may listen on', () => {
  it.each<[string, string | undefined, number[] | null]>([
    ['unset: any port', undefined, null],
    ['one port (what Terraform sets)', '3128', [3128]],
    ['several, with spaces', ' 8080 , 3128 ', [3128, 8080]],
    ['repeats collapse', '3128,3128', [3128]],
    ['the bounds', '1,65535', [1, 65535]],
  ])('%s', (_name, value, expected) => {
    expect(loadApiConfig({ ...tokens, MANAGED_PROXY_PORTS: value }).managedProxyPorts).toEqual(expected);
  });

  it.each([
    ['empty', ''],
    ['a trailing comma', '3128,'],
    ['not a number', 'squid'],
    ['0', '0'],
    ['above 65535', '65536'],
    ['fractional', '3128.5'],
    ['negative', '-1'],
    ['exponent notation', '3e3'],
    ['hex', '0xc38'],
    ['a range', '3128-3130'],
    ['semicolons', '3128;8080'],
    ['one bad entry among good ones', '3128,80a,8080'],
  ])('refuses %s, naming the variable and the expected form', (_name, value) => {
    expect(() => loadApiConfig({ ...tokens, MANAGED_PROXY_PORTS: value })).toThrow(
      /MANAGED_PROXY_PORTS[\s\S]*comma-separated TCP ports, each an integer 1-65535/,
    );
  });
});

describe('RATE_LIMIT_*: the per-caller rate limit of each route class', () => {
  it('defaults every class to DEFAULT_CALLER_RATES', () => {
    expect(loadApiConfig(tokens).callerRates).toEqual(DEFAULT_CALLER_RATES);
  });

  it('reads "<per second>:<burst>" per class, leaving the others at their defaults', () => {
    const rates = loadApiConfig({
      ...tokens,
      RATE_LIMIT_LEASE_ACQUIRE: '5:10',
      RATE_LIMIT_ADMIN_READ: ' 0.5 : 3 ',
    }).callerRates;
    expect(rates['lease-acquire']).toEqual({ perSecond: 5, burst: 10 });
    expect(rates['admin-read']).toEqual({ perSecond: 0.5, burst: 3 });
    expect(rates['lease-other']).toEqual(DEFAULT_CALLER_RATES['lease-other']);
  });

  it.each([
    ['empty', ''],
    ['one number', '1000'],
    ['a zero rate', '0:10'],
    ['a zero burst', '10:0'],
    ['a fractional burst', '10:1.5'],
    ['negative', '-1:10'],
    ['words', 'fast'],
    ['a slash', '1000/2000'],
    ['over the bounds', '200000:10'],
  ])('refuses %s at start, naming the variable and the expected form', (_name, value) => {
    for (const name of [...CALLER_CLASSES.map(rateEnvName), 'RATE_LIMIT_AUTH_FAILURE']) {
      expect(() => loadApiConfig({ ...tokens, [name]: value })).toThrow(
        new RegExp(`${name}[\\s\\S]*<per second>:<burst>`),
      );
    }
  });
});

describe('RATE_LIMIT_AUTH_FAILURE: failed authentications per client address', () => {
  it('defaults to 10 a second, burst 100, and reads "<per second>:<burst>"', () => {
    expect(DEFAULT_AUTH_FAILURE_RATE).toEqual({ perSecond: 10, burst: 100 });
    expect(loadApiConfig(tokens).authFailureRate).toEqual(DEFAULT_AUTH_FAILURE_RATE);
    expect(loadApiConfig({ ...tokens, RATE_LIMIT_AUTH_FAILURE: '2:20' }).authFailureRate).toEqual({
      perSecond: 2,
      burst: 20,
    });
  });
});

describe('DISCOVERY_TOKENS: the crawlers’ tokens', () => {
  const crawler = 'crawler-a:abcdefghijklmnopqrstuvwxyz012345';
  it('reads the named tokens', () => {
    expect(loadApiConfig({ ...tokens, DISCOVERY_TOKENS: crawler }).leases.tokens.map((t) => t.name)).toEqual([
      'crawler-a',
    ]);
  });
  it('unset: admin credentials only (no crawler token)', () => {
    expect(loadApiConfig({ ...tokens }).leases.tokens).toEqual([]);
  });
  // A rotation whose new secret version is blank (or lost every entry): started, the revision would pass
  // its health check, take the traffic, and answer every crawler 401.
  it.each([
    ['empty', ''],
    ['blank', '  '],
    ['commas only', ' , ,'],
  ])('set but %s: refused at start, naming the variable', (_name, value) => {
    expect(() => loadApiConfig({ ...tokens, DISCOVERY_TOKENS: value })).toThrow(
      /DISCOVERY_TOKENS is set but names no crawler token/,
    );
  });
});
