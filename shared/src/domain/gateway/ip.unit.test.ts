// isNoDnsName: the one rule for hosts that are neither a strict dotted quad nor a DNS name — the proxy
// listener refuses them as malformed targets, /v1/fetch as bad_url, the guard never resolves them, and
// route hosts ending in a number are refused (head.unit.test.ts holds route patterns and the listener
// together).
import { describe, expect, it } from 'vitest';
import { isNoDnsName } from './ip.js';

describe('isNoDnsName', () => {
  it.each([
    '0x7f.1',
    '127.1',
    '2130706433',
    '0177.0.0.1',
    '010.0.0.1',
    '1.2.3',
    '1.2.3.4.5',
    '1.2.3.256',
    'example.0x',
    'example.0x1f',
    'example.123',
    '127.0.0.1.',
    'example.com.',
    'a..b',
    '.example',
    '',
  ])('%j is no DNS name', (host) => {
    expect(isNoDnsName(host)).toBe(true);
  });

  it.each([
    '127.0.0.1',
    '0.0.0.0',
    '255.255.255.255',
    'example.com',
    'localhost',
    '123.example',
    '0x7f.example',
    'a1.example',
    'example.0xg',
    'example.1a',
    '_acme.example',
    // IPv6 literals are judged as addresses, never as names: their colons and hex are no label.
    '::1',
    'fe80::1',
    '::ffff:127.0.0.1',
  ])('%j is an address or a DNS name', (host) => {
    expect(isNoDnsName(host)).toBe(false);
  });
});
