import { describe, expect, it } from 'vitest';
import { loadApiConfig } from './config.js';

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
