import { describe, expect, it } from 'vitest';
import { isEndpointHost, quotableHost, refusedEndpointHost } from './endpoint-host.js';
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
    // A zone names an interface of the dialling machine; parseIp stops at the '%' and judged the rest unread.
    ['fe80::1%eth0', false],
    ['2001:db8::1%alice:s3cret@evil.example', false],
    // Spellings getaddrinfo reads as another address (inet_aton): 192.168.1.8, 8.0.0.1, 127.0.0.1, 203.0.0.113.
    ['192.168.001.010', false],
    ['010.0.0.1', false],
    ['127.1', false],
    ['0x7f.1', false],
    ['0X7F.0.0.1', false],
    ['2130706433', false],
    ['203.0.113', false],
    ['1.2.3.256', false],
    ['1.2.3.4.5', false],
    ['p.09', false],
    ['10.0.0.1.', false],
    // A digit leads many a real name; only a last label that is a number is no DNS name.
    ['1e100.net', true],
    ['123.example.com', true],
    ['0x1.example', true],
  ])('%s → %s', (host, ok) => expect(isEndpointHost(host)).toBe(ok));
});

describe('quotableHost: a refused host quoted back without what could be a password', () => {
  it.each([
    // The export format of many proxy providers, pasted whole into the host field.
    ['p.example.com:3128:alice:s3cret', 'p.example.com:…'],
    ['alice:s3cret', 'alice:…'],
    ['alice:s3c@ret@p.example.com', '…@p.example.com'],
    ['u:p@h.example:1:x:y', 'u:…'],
    // A password holding an '@' in a provider's line: what follows the '@' is no host.
    ['p.example.com alice s3c@ret', 'p.example.com …'],
    ['p.example.com,alice,s3c@ret', 'p.example.com,…'],
    ['p.example.com:alice:s3c@ret', 'p.example.com:…'],
    ['alice:s3c@ret:p.example.com:3128', 'alice:…'],
    ['alice,s3c@ret,p.example.com,3128', 'alice,…'],
    ['http://alice:s3c@ret@p.example.com:3128', '…@p.example.com:…'],
    ['p.example.com:3128:alice:s3@cret', 'p.example.com:…'],
    ['p.example.com 3128 alice s3cret', 'p.example.com …'],
    ['2001:db8::1%alice:s3cret@evil.example', '2001:db8::1%…'],
    ['fe80::1%eth0', 'fe80::1%…'],
    // The same line with other separators, or without its port: all that follows the host is cut.
    ['p.example.com,3128,alice,S3cretPw77', 'p.example.com,…'],
    ['p.example.com;3128;alice;s3cret', 'p.example.com;…'],
    ['p.example.com|3128|alice|s3cret', 'p.example.com|…'],
    ['p.example.com\t3128\talice\ts3cret', 'p.example.com\t…'],
    ['p.example.com\talice\ts3cret', 'p.example.com\t…'],
    ['p.example.com alice s3cret', 'p.example.com …'],
    ['p.example.com:3128,alice,s3cret', 'p.example.com:…'],
    ['p.example.com\nalice:s3cret', 'p.example.com…'],
    ['alice,s3cret', 'alice,…'],
    ['http://p.example.com/alice/s3cret', 'http://p.example.com/…'],
    ['[alice s3cret]:3128', '…'],
    ['p.example.com:123456:s3cret', 'p.example.com:…'],
    // A port reads like a numeric password: never quoted, even alone.
    ['p.example.com:3128', 'p.example.com:…'],
    ['http://p.example.com:3128', 'http://p.example.com:…'],
    ['[2001:db8::1]:3128', '[2001:db8::1]:…'],
    // Kept up to where the input went wrong: the operator sees which part to look at.
    ['p example.com', 'p …'],
    ['p_1.example.com', 'p…'],
  ])('%s → %s', (host, quoted) => {
    expect(quotableHost(host)).toBe(quoted);
    expect(quotableHost(host)).not.toMatch(/s3c|ret/);
  });

  // user:pass:host:port with a numeric password: the user and the digits read like a host and its port.
  it.each([
    ['alice:12345:p.example.com:3128', 'alice:…'],
    ['alice,12345,p.example.com,3128', 'alice,…'],
    ['alice 12345 p.example.com 3128', 'alice …'],
    ['alice:12345:p.example.com', 'alice:…'],
    ['user.name:12345:p.example.com:3128', 'user.name:…'],
    ['alice:12345,p.example.com,3128', 'alice:…'],
    ['http://alice:12345/p.example.com', 'http://alice:…'],
    // A user with a dot, a host of one label, an unbracketed IPv6 address, '_' in a name, an '@' after it.
    ['john.doe:12345:localhost:3128', 'john.doe:…'],
    ['user.name\t12345\tproxy-1\t3128', 'user.name\t…'],
    ['socks5://user.name:12345:gw:1080', 'socks5://user.name:…'],
    ['user.name:12345:2001:db8::1:3128', 'user.name:…'],
    ['user.name:12345:p_1.example.com:3128', 'user.name:…'],
    ['user.name:12345.6:p.example.com:3128', 'user.name:…'],
    ['user.name:12345@localhost:3128:x', 'user.name:…'],
    ['p.example.com:alice@example.com:12345', '…@example.com:…'],
    ['alice@example.com:12345', '…@example.com:…'],
    // host:port:user:pass with a numeric password: the port goes with it, the host stays.
    ['p.example.com:3128:alice:12345', 'p.example.com:…'],
    ['203.0.113.7:3128:alice:12345', '203.0.113.7:…'],
    ['admin:12345', 'admin:…'],
  ])('%s → %s', (host, quoted) => {
    expect(quotableHost(host)).toBe(quoted);
    expect(quotableHost(host)).not.toMatch(/12345/);
  });
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
