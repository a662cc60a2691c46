import { describe, expect, it } from 'vitest';
import { cooldownSite } from './cooldown.js';
import { canonicalTarget } from './target.js';
import { AcquireRequest, ReportRequest } from './wire.js';

describe('canonicalTarget', () => {
  it.each([
    ['shop.example', 'shop.example'],
    ['Shop.Example:8080', 'shop.example:8080'],
    // A host name's port is a number, written as for an IPv6 address: without leading zeros.
    ['shop.example:0443', 'shop.example:443'],
    ['shop.example:65535', 'shop.example:65535'],
    // What `new URL('https://Shop.Example./').host` gives: the same site as without its trailing dot.
    ['Shop.Example.', 'shop.example'],
    ['shop.example.:8080', 'shop.example:8080'],
    ['127.0.0.1:18320', '127.0.0.1:18320'],
    // What `new URL(u).host` gives for an IPv6 site, and other spellings of the same site.
    ['[::1]:8080', '[::1]:8080'],
    ['[0:0:0:0:0:0:0:1]:8080', '[::1]:8080'],
    ['[::1]:08080', '[::1]:8080'],
    ['[::1]', '[::1]'],
    ['[2001:db8::1]:443', '[2001:db8::1]:443'],
    ['[2001:DB8:0:0::1]:443', '[2001:db8::1]:443'],
    ['[2001:0db8:0000:0000:0000:0000:0000:0001]:443', '[2001:db8::1]:443'],
    // An IPv4-mapped address is the IPv4 address it maps (gateway/ip.ts unmapped).
    ['[::ffff:192.0.2.1]:80', '192.0.2.1:80'],
    ['[::ffff:c000:201]:80', '192.0.2.1:80'],
    ['[0:0:0:0:0:FFFF:c000:201]', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    // Not mapped: an IPv4-compatible (::a.b.c.d) or translated (::ffff:0:a.b.c.d) address stays IPv6.
    ['[::192.0.2.1]:80', '[::c000:201]:80'],
    ['[::ffff:0:192.0.2.1]:80', '[::ffff:0:c000:201]:80'],
    // A bare address is the address, without a port.
    ['2001:db8::1', '[2001:db8::1]'],
    ['::1', '[::1]'],
    ['1:2:3:4:5:6:7:8', '[1:2:3:4:5:6:7:8]'],
  ])('%s → %s', (text, canonical) => {
    expect(canonicalTarget(text)).toBe(canonical);
  });

  it.each([
    '*',
    'a b',
    '[::1',
    '::1]:80',
    '[]:80',
    '[::1]:',
    '[::1]:0',
    '[::1]:65536',
    '[::1]:123456',
    '[1::2::3]:80',
    '[12345::1]:80',
    '[1:2:3:4:5:6:7:8:9]:80',
    '[192.0.2.1]:80',
    '[shop.example]:80',
    '[fe80::1%eth0]:80',
    'fe80::1%eth0',
    '[::1]x',
    '[::1]:80:80',
    '1::2::3',
    'shop.example::80',
    // host:port is a host name and one port in 1-65535, as for an IPv6 address above.
    'shop.example:0',
    'shop.example:65536',
    'shop.example:123456',
    'shop.example:80:80',
    'shop.example:http',
    'a:b',
    'a:b:c',
    'shop.example..',
    '.',
    // Numbers that are no dotted quad: every client reads them as an address (`new URL` writes 127.0.0.1),
    // so kept as written they would be a site of their own, out of the address's cooldowns.
    '127.1',
    '127.1:8080',
    '0x7f.0.0.1',
    '0177.0.0.1',
    '2130706433',
    '1.2.3.4.5',
    'shop.123',
    'a..b:443',
    // Longer than DNS's 253 characters.
    `${'a'.repeat(250)}.com`,
  ])('refuses %s', (text) => {
    expect(canonicalTarget(text)).toBeNull();
  });
});

describe('an IPv4-mapped IPv6 target (gateway/ip.ts unmapped: the IPv4 address it maps)', () => {
  it('is the IPv4 address: one cooldown site, one target', () => {
    expect(cooldownSite(canonicalTarget('[::ffff:1.2.3.4]:443')!)).toBe('1.2.3.4');
    expect(canonicalTarget('[::ffff:1.2.3.4]:443')).toBe(canonicalTarget('1.2.3.4:443'));
  });

  it('a cooldown stored under the mapped spelling before holds for the IPv4 site', () => {
    expect(cooldownSite('[::ffff:102:304]')).toBe('1.2.3.4');
    expect(cooldownSite('[::ffff:102:304]:443')).toBe('1.2.3.4');
    expect(cooldownSite('[2001:db8::1]:443')).toBe('[2001:db8::1]');
  });
});

describe('Target on the wire', () => {
  it('a host as new URL(u).host gives it, trailing dot and all, is taken as the site without it', () => {
    expect(AcquireRequest.parse({ target: new URL('https://Shop.Example./').host }).target).toBe(
      'shop.example',
    );
    expect(ReportRequest.parse({ result: 'banned', target: 'shop.example.:8443' }).target).toBe(
      'shop.example:8443',
    );
  });

  it('an acquire and a report for two spellings of one IPv6 site carry one target', () => {
    expect(AcquireRequest.parse({ target: '[2001:DB8::0:1]:443' }).target).toBe('[2001:db8::1]:443');
    expect(ReportRequest.parse({ result: 'banned', target: '[2001:db8:0::1]:443' }).target).toBe(
      '[2001:db8::1]:443',
    );
  });

  it('a host name up to 253 characters is taken with a port and a trailing dot', () => {
    const host = `${'a.'.repeat(125)}com`;
    expect(host).toHaveLength(253);
    expect(AcquireRequest.parse({ target: `${host}.:65535` }).target).toBe(`${host}:65535`);
  });

  it.each(['[::1', '[1::2::3]:80', '[::1]:65536', '[fe80::1%eth0]:80', '*', 'shop.example:65536', 'a:b:c'])(
    'refuses %s with one issue at target',
    (target) => {
      const r = AcquireRequest.safeParse({ target });
      expect(r.success).toBe(false);
      expect(r.error?.issues.map((i) => i.path)).toEqual([['target']]);
    },
  );
});
