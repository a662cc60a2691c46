import { describe, expect, it } from 'vitest';
import { cidrContains, parseCidr, parseIp, parseIpv6 } from './ip.js';
import { classifyIp, decideTarget, emptyAllowList, parseAllowList } from './ssrf.js';

const classify = (text: string) => {
  const ip = parseIp(text);
  if (!ip) throw new Error(`not an IP: ${text}`);
  return classifyIp(ip);
};

describe('parseIp', () => {
  it.each([
    ['1.2.3.4', [1, 2, 3, 4]],
    ['255.255.255.255', [255, 255, 255, 255]],
  ])('parses IPv4 %s', (text, bytes) => {
    expect([...(parseIp(text)?.bytes ?? [])]).toEqual(bytes);
  });

  it.each([
    '256.1.1.1',
    '1.2.3',
    '01.2.3.4',
    '0x7f.0.0.1',
    '2130706433',
    '1.2.3.4.5',
    '',
    'example.com',
    ':::',
    '1::2::3',
    '12345::',
    'g::1',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    // A dotted quad ends the address or is not there: inet_pton (net.isIP) refuses these, so an upstream
    // would not read them as the address the guard judged (target-guard.unit.test.ts).
    '1.2.3.4::',
    '127.0.0.1::',
    '1.2.3.4::5.6.7.8',
    '::1.2.3.4:1',
  ])('refuses %j as a literal', (text) => {
    expect(parseIp(text)).toBeNull();
  });

  it.each([
    ['::', '00000000000000000000000000000000'],
    ['::1', '00000000000000000000000000000001'],
    ['[::1]', '00000000000000000000000000000001'],
    ['fe80::1%eth0', 'fe800000000000000000000000000001'],
    ['::ffff:10.0.0.1', '00000000000000000000ffff0a000001'],
    ['2001:db8:0:0:1:0:0:1', '20010db8000000000001000000000001'],
    ['1:2:3:4:5:6:7::', '00010002000300040005000600070000'],
  ])('parses IPv6 %s', (text, hex) => {
    expect(Buffer.from(parseIpv6(text)!).toString('hex')).toBe(hex);
  });
});

describe('classifyIp', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.0', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['169.254.169.254', 'metadata'],
    ['169.254.0.1', 'link_local'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['fc00::1', 'unique_local'],
    ['fd12:3456::1', 'unique_local'],
    ['ff02::1', 'multicast'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['64:ff9b::10.1.2.3', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['2002:c0a8:0101::1', 'private'],
    ['2001:db8::1', 'reserved'],
    ['2001:2::1', 'reserved'],
    ['2001:2:0:ffff::1', 'reserved'],
    ['3fff::1', 'reserved'],
    ['3fff:fff::1', 'reserved'],
    ['5f00::1', 'reserved'],
    ['::ffff:0:7f00:1', 'loopback'],
    ['::ffff:0:169.254.169.254', 'metadata'],
  ])('%s is %s', (ip, reason) => {
    expect(classify(ip)).toBe(reason);
  });

  it.each([
    '1.1.1.1',
    '8.8.8.8',
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '169.253.255.255',
    '192.167.255.255',
    '223.255.255.255',
    '2606:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:0808:0808::1',
    '2001:3::1',
    '3fff:1000::1',
    '5eff::1',
    '::ffff:0:808:808',
  ])('%s is public', (ip) => {
    expect(classify(ip)).toBeNull();
  });
});

describe('cidrContains', () => {
  it.each([
    ['10.0.0.0/8', '10.9.9.9', true],
    ['10.0.0.0/8', '11.0.0.0', false],
    ['127.0.0.1/32', '::ffff:127.0.0.1', true],
    ['::ffff:127.0.0.0/104', '127.1.2.3', true],
    ['fd00::/8', 'fd00::5', true],
    ['fd00::/8', '10.0.0.1', false],
    ['0.0.0.0/0', '8.8.8.8', true],
  ])('%s contains %s: %s', (cidr, ip, expected) => {
    expect(cidrContains(parseCidr(cidr)!, parseIp(ip)!)).toBe(expected);
  });
});

describe('decideTarget', () => {
  const { allow, invalid } = parseAllowList([
    '127.0.0.1:19001',
    '10.1.0.0/16',
    'demo.local:8080',
    '[::1]:9000',
    '[0:0:0:0:0:0:0:1]:9001',
    '[::ffff:10.9.9.9]:9002',
    'Spelt.Loosely.:08081',
    'nonsense:',
    '',
  ]);

  it('reports allow-list entries it cannot read', () => {
    expect(invalid).toEqual(['nonsense:']);
  });

  it.each([
    ['public literal', 'example.com', 443, ['93.184.216.34'], { allow: true, address: '93.184.216.34' }],
    [
      'name resolving to a private address',
      'evil.example',
      80,
      ['10.0.0.5'],
      { allow: false, reason: 'private' },
    ],
    [
      'one private answer among public ones',
      'mixed.example',
      80,
      ['8.8.8.8', '192.168.0.1'],
      { allow: false, reason: 'private' },
    ],
    [
      'metadata by name',
      'metadata.google.internal',
      80,
      ['169.254.169.254'],
      { allow: false, reason: 'metadata' },
    ],
    ['metadata by address', '169.254.169.254', 80, ['169.254.169.254'], { allow: false, reason: 'metadata' }],
    ['localhost by name', 'localhost', 80, ['8.8.8.8'], { allow: false, reason: 'loopback' }],
    ['mapped private', '::ffff:10.0.0.1', 80, ['::ffff:10.0.0.1'], { allow: false, reason: 'private' }],
    ['nothing resolved', 'nx.example', 80, [], { allow: false, reason: 'unresolvable' }],
    ['port 0', 'example.com', 0, ['8.8.8.8'], { allow: false, reason: 'bad_port' }],
  ])('%s', (_label, host, port, addresses, expected) => {
    expect(decideTarget(host, port, addresses, emptyAllowList)).toEqual(expected);
  });

  it.each([
    ['allowed host:port', '127.0.0.1', 19001, ['127.0.0.1'], true],
    ['same host, other port', '127.0.0.1', 19002, ['127.0.0.1'], false],
    ['allowed CIDR, any port', 'svc.internal', 5, ['10.1.2.3'], true],
    ['outside the allowed CIDR', 'svc.internal', 5, ['10.2.0.1'], false],
    ['allowed name:port even if private', 'demo.local', 8080, ['192.168.1.9'], true],
    ['allowed IPv6 host:port', '::1', 9000, ['::1'], true],
    // The listeners hand over an IPv6 literal in its RFC 5952 text: so is an entry's.
    ['an IPv6 host:port entry spelt long', '::1', 9001, ['::1'], true],
    // A resolver writes an IPv4-mapped address as inet_ntop does ("::ffff:10.9.9.9"), not in RFC 5952's
    // all-hex text the entry is kept in: compared as text they never met.
    [
      'an IPv4-mapped host:port entry, the name resolving to it',
      'mapped.internal',
      9002,
      ['::ffff:10.9.9.9'],
      true,
    ],
    ['the same entry, the mapped literal itself', '::ffff:a09:909', 9002, ['::ffff:a09:909'], true],
    ['a name:port entry in capitals, a trailing dot, a leading 0', 'spelt.loosely', 8081, ['10.0.0.1'], true],
    ['no suffix match for a name:port entry', 'evil-demo.local', 8080, ['192.168.1.9'], false],
    ['nor for a sub-domain of it', 'x.demo.local', 8080, ['192.168.1.9'], false],
  ])('allow-list: %s', (_label, host, port, addresses, expected) => {
    expect(decideTarget(host, port, addresses, allow).allow).toBe(expected);
  });
});
