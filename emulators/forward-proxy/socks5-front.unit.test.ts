import { describe, expect, it } from 'vitest';
import { ipv6Bytes, Reply, replyForFailure, socksReply } from './socks5-front.js';

describe('ipv6Bytes', () => {
  it.each([
    ['::1', '00000000000000000000000000000001'],
    ['::', '00000000000000000000000000000000'],
    ['fe80::1%eth0', 'fe800000000000000000000000000001'],
    ['2001:db8:0:0:1:0:0:1', '20010db8000000000001000000000001'],
    ['::ffff:10.0.0.7', '00000000000000000000ffff0a000007'],
    ['2001:db8::', '20010db8000000000000000000000000'],
  ])('%s', (address, hex) => {
    expect(ipv6Bytes(address).toString('hex')).toBe(hex);
  });
});

describe('socksReply', () => {
  it('carries the bound IPv4 address and port', () => {
    expect([...socksReply(Reply.succeeded, '127.0.0.1', 0x1f90)]).toEqual([
      5, 0, 0, 1, 127, 0, 0, 1, 0x1f, 0x90,
    ]);
  });
  it('an IPv6 bound address is ATYP 4 and 16 bytes', () => {
    const reply = socksReply(Reply.succeeded, '::1', 1);
    expect(reply.length).toBe(4 + 16 + 2);
    expect(reply[3]).toBe(4);
    expect(reply[19]).toBe(1);
  });
  it('a failure carries the zero address', () => {
    expect([...socksReply(Reply.connectionRefused)]).toEqual([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]);
  });
});

describe('replyForFailure', () => {
  it.each([
    [504, undefined, Reply.ttlExpired],
    [502, 'ECONNREFUSED', Reply.connectionRefused],
    [502, 'ENETUNREACH', Reply.networkUnreachable],
    [502, 'EHOSTUNREACH', Reply.hostUnreachable],
    [502, 'ENOTFOUND', Reply.hostUnreachable],
    [502, 'ECONNRESET', Reply.generalFailure],
  ] as const)('%s %s → %s', (status, code, rep) => {
    expect(replyForFailure(status, code)).toBe(rep);
  });
});
