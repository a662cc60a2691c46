// isMatchableHostPattern (routing.ts) says which route hosts the API and `routing apply` take: those a
// request's host, normalised as the listeners normalise it, can match in matchRoute, read one way by both
// listeners (a name ending in a number is an address to /v1/fetch's WHATWG URL, a malformed target, 400, to
// the proxy listener: isNoDnsName in ip.ts).
import { describe, expect, it } from 'vitest';
import { HostPattern } from '../../messages/gateway-snapshot.js';
import { compileRouting, isMatchableHostPattern, matchRoute, normalizeHost } from './routing.js';

const matches = (pattern: string, requestHost: string) => {
  const route = { name: 'r', match: { hosts: [pattern] }, selector: {}, policy: 'least-active' as const };
  return matchRoute(compileRouting([route], []), normalizeHost(requestHost))?.name === 'r';
};

describe('isMatchableHostPattern', () => {
  it.each([
    ['*', 'anything.example'],
    ['shop.example', 'SHOP.example.'],
    ['*.example.com', 'a.b.example.com'],
    ['cafe.be.', 'cafe.be'],
    // A trailing dot on any name, not only one written in hex digits (`cafe.be.` passed as an IPv6 text).
    ['shop.example.', 'shop.example'],
    ['*.example.com.', 'a.example.com'],
    ['xn--p1ai.', 'xn--p1ai'],
    ['_acme.example', '_acme.example'],
    ['localhost', 'localhost'],
    ['*.xn--p1ai', 'shop.xn--p1ai'],
    ['123.example', '123.example'],
    ['10.0.0.1', '10.0.0.1'],
    ['2001:db8::1', '[2001:0DB8:0:0::1]'],
    ['::ffff:1.2.3.4', '[::ffff:102:304]'],
  ])('takes %j (it matches %j)', (pattern, requestHost) => {
    const host = HostPattern.parse(pattern);
    expect(isMatchableHostPattern(host)).toBe(true);
    expect(matches(host, requestHost)).toBe(true);
  });

  // Each is a HostPattern (stored documents keep parsing), indexed as written: it matches no request host
  // (a port is never part of one), or, `*.0.0.1`, the IP literal 10.0.0.1 (`*.suffix` is for names), or it
  // ends in a number: an address /v1/fetch rewrites (010.0.0.1 is 8.0.0.1, 1.2.3 is 1.2.0.3, 0x7f.1 is
  // 127.0.0.1), as WHATWG URL does, and the proxy listener refuses as malformed (400).
  it.each([
    '10.0.0.1:8080',
    '1.2.3.4:443',
    '.',
    ':::',
    'a..b',
    'cafe.be..',
    '*.0.0.1',
    '*.10.0.0',
    '010.0.0.1',
    '1.2.3',
    '123',
    '0x7f.1',
    'foo.123',
    'a.0x10',
    '*.1',
    '*.1.2.3.4',
    '10.0.0.1.',
  ])('refuses %j', (pattern) => {
    const host = HostPattern.parse(pattern);
    expect(isMatchableHostPattern(host)).toBe(false);
  });

  it('refuses *.0.0.1, which matched the IP literal 10.0.0.1', () => {
    expect(matches('*.0.0.1', '10.0.0.1')).toBe(true);
    expect(isMatchableHostPattern('*.0.0.1')).toBe(false);
  });
});
