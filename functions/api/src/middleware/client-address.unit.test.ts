import { describe, expect, it } from 'vitest';
import { clientAddress, forwardedFor, sourceKey } from './client-address.js';

describe('clientAddress', () => {
  it.each<[string, string | undefined, string | undefined]>([
    ['the only entry (what Cloud Run sends a client that sent none)', '203.0.113.7', '203.0.113.7'],
    ['the last entry, not the one the client put in front', '198.51.100.1, 203.0.113.7', '203.0.113.7'],
    ['the last entry behind several spoofed ones', '10.0.0.1,1.1.1.1 , 203.0.113.7', '203.0.113.7'],
    ['whatever the client wrote in front of it', 'not-an-address, 203.0.113.7', '203.0.113.7'],
    ['empty entries skipped', '198.51.100.1, , 203.0.113.7,', '203.0.113.7'],
    ['an IPv6 client', '198.51.100.1, 2001:db8::1', '2001:db8::1'],
    ['no header: the peer (never on Cloud Run)', undefined, '169.254.1.1'],
  ])('behind one trusted front end: %s', (_name, header, expected) => {
    expect(clientAddress(header, 1, '169.254.1.1')).toBe(expected);
  });

  it('with two trusted hops (a load balancer in front), the second entry from the end', () => {
    expect(clientAddress('198.51.100.1, 203.0.113.7, 34.1.2.3', 2, undefined)).toBe('203.0.113.7');
    expect(clientAddress('34.1.2.3', 2, '10.0.0.9')).toBe('10.0.0.9');
  });

  it('with no trusted front end, the socket peer whatever the header says', () => {
    expect(clientAddress('203.0.113.7', 0, '127.0.0.1')).toBe('127.0.0.1');
    expect(clientAddress(undefined, 0, '::1')).toBe('::1');
    expect(clientAddress('203.0.113.7', 0, undefined)).toBeUndefined();
  });

  it('forwardedFor splits, trims and drops empty entries', () => {
    expect(forwardedFor(' a ,b,, c ')).toEqual(['a', 'b', 'c']);
    expect(forwardedFor(undefined)).toEqual([]);
  });
});

describe('sourceKey', () => {
  it.each<[string, string | undefined, string]>([
    ['IPv4 as it is', '203.0.113.7', '203.0.113.7'],
    ['IPv4-mapped IPv6 as its IPv4 address (a dual-stack socket)', '::ffff:127.0.0.1', '127.0.0.1'],
    ['IPv4-mapped IPv6 in hex', '::ffff:cb00:7107', '203.0.113.7'],
    ['IPv6 as its /64', '2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['a compressed IPv6 address', '2001:db8::1', '2001:db8::/64'],
    ['leading zeros and capitals alike', '2001:0DB8:0001:0002::9', '2001:db8:1:2::/64'],
    ['IPv6 loopback', '::1', '::/64'],
    ['a zone id ignored', 'fe80::1%eth0', 'fe80::/64'],
    ['an IPv4 tail', '64:ff9b::192.0.2.33', '64:ff9b::/64'],
    ['no address', undefined, 'unknown'],
    ['not an address, cut short', `x${'y'.repeat(100)}`, `other:x${'y'.repeat(63)}`],
  ])('%s', (_name, address, expected) => {
    expect(sourceKey(address)).toBe(expected);
  });

  it('gives every address of one /64 the same key, and the next /64 another', () => {
    const keys = ['2001:db8:5:6::1', '2001:db8:5:6:ffff::', '2001:db8:5:6:1:2:3:4'].map(sourceKey);
    expect(new Set(keys).size).toBe(1);
    expect(sourceKey('2001:db8:5:7::1')).not.toBe(keys[0]);
  });
});
