import { describe, expect, it } from 'vitest';
import { externalSpec, managedSpec } from '../testing/proxy-fixtures.js';
import { unsupportedManagedProtocol } from './managed-protocol.js';

describe('a managed spec naming a protocol its VM does not serve', () => {
  it.each([
    ['managed, http (the default)', managedSpec(), null],
    ['managed, socks5', managedSpec({ protocol: 'socks5' }), 'socks5'],
    ['external, http', externalSpec(), null],
    [
      'external, socks5',
      externalSpec({ endpoint: { host: 'p.example', port: 1080, protocol: 'socks5' } }),
      null,
    ],
  ])('%s → %s', (_l, spec, expected) => {
    expect(unsupportedManagedProtocol(spec)).toBe(expected);
  });
});
