import { describe, expect, it } from 'vitest';
import { type Socks5Failure, socks5Failure } from './socks5-failure.js';

const REPLY_TAIL = [0x00, 0x01, 0, 0, 0, 0, 0, 0]; // RSV ATYP=IPv4 0.0.0.0:0

describe('socks5Failure: what the upstream answered (RFC 1928, RFC 1929)', () => {
  it.each<[string, number[], Socks5Failure]>([
    ['nothing at all', [], { kind: 'closed' }],
    ['half a method choice', [0x05], { kind: 'closed' }],
    [
      'an http answer, not SOCKS5',
      [...Buffer.from('HTTP/1.1 400 Bad Request')],
      { kind: 'handshake_failed' },
    ],
    ['SOCKS4 version byte', [0x04, 0x00], { kind: 'handshake_failed' }],
    ['no acceptable method (wants credentials we lack)', [0x05, 0xff], { kind: 'auth_failed' }],
    ['a method we never offer (GSSAPI)', [0x05, 0x01], { kind: 'handshake_failed' }],
    ['user/pass chosen, then refused', [0x05, 0x02, 0x01, 0x01], { kind: 'auth_failed' }],
    ['user/pass chosen, closed before the status', [0x05, 0x02], { kind: 'closed' }],
    ['user/pass accepted, closed before the reply', [0x05, 0x02, 0x01, 0x00], { kind: 'closed' }],
    [
      'user/pass ok, host unreachable',
      [0x05, 0x02, 0x01, 0x00, 0x05, 0x04, ...REPLY_TAIL],
      { kind: 'refused', reply: 4 },
    ],
    ['no auth, connection refused', [0x05, 0x00, 0x05, 0x05, ...REPLY_TAIL], { kind: 'refused', reply: 5 }],
    ['no auth, not allowed by ruleset', [0x05, 0x00, 0x05, 0x02], { kind: 'refused', reply: 2 }],
    ['no auth, general failure', [0x05, 0x00, 0x05, 0x01], { kind: 'refused', reply: 1 }],
    ['no auth, address type not supported', [0x05, 0x00, 0x05, 0x08], { kind: 'refused', reply: 8 }],
    ['a reply that is not SOCKS5', [0x05, 0x00, 0x04, 0x5a], { kind: 'handshake_failed' }],
    ['granted, then cut before the address', [0x05, 0x00, 0x05, 0x00, 0x00], { kind: 'closed' }],
  ])('%s → %j', (_n, bytes, expected) => {
    expect(socks5Failure(Uint8Array.from(bytes))).toEqual(expected);
  });
});
