import { describe, expect, it } from 'vitest';
import {
  awaitingConnectReply,
  grantedReplyReadable,
  socks5Answer,
  socks5FailureCode,
} from './socks5-answer.js';

const reply = (rep: number) => [5, rep, 0, 1, 0, 0, 0, 0, 0, 0];

describe('socks5Answer: the failure a SOCKS5 proxy answered, and its probe code', () => {
  it.each([
    ['nothing at all', [], 'closed', 'econnreset'],
    ['half a method choice', [5], 'closed', 'econnreset'],
    ['no acceptable method (wants credentials)', [5, 0xff], 'auth_failed', 'proxy_auth_required'],
    ['credentials refused (RFC 1929 status 1)', [5, 2, 1, 1], 'auth_failed', 'proxy_auth_required'],
    ['credentials accepted, then hung up', [5, 2, 1, 0], 'closed', 'econnreset'],
    ['connection refused (REP 5) after auth', [5, 2, 1, 0, ...reply(5)], 'refused', 'socks_reply_5'],
    ['host unreachable (REP 4), open proxy', [5, 0, ...reply(4)], 'refused', 'socks_reply_4'],
    ['not allowed by its rules (REP 2)', [5, 0, ...reply(2)], 'refused', 'socks_reply_2'],
    ['TTL expired (REP 6): the target timed out', [5, 0, ...reply(6)], 'refused', 'socks_reply_6'],
    [
      'an HTTP proxy answering the greeting',
      [...Buffer.from('HTTP/1.1 400 Bad Request\r\n')],
      'not_socks5',
      'not_socks5',
    ],
    ['a method never offered (GSSAPI)', [5, 1], 'not_socks5', 'not_socks5'],
    ['a reply of another version', [5, 0, 4, 0, 0, 1], 'not_socks5', 'not_socks5'],
    ['granted, then hung up', [5, 0, ...reply(0)], 'closed', 'econnreset'],
  ])('%s → %s (%s)', (_l, bytes, kind, code) => {
    const a = socks5Answer(Uint8Array.from(bytes));
    expect(a.kind).toBe(kind);
    expect(socks5FailureCode(a)).toBe(code);
  });
});

describe('grantedReplyReadable', () => {
  it.each<[string, number[][], boolean]>([
    ['no auth, IPv4', [[0x05, 0x00, 0x05, 0x00, 0x00, 0x01]], true],
    ['no auth, IPv6, split', [[0x05, 0x00, 0x05], [0x00, 0x00], [0x04]], true],
    [
      'user/pass, host name',
      [
        [0x05, 0x02],
        [0x01, 0x00],
        [0x05, 0x00, 0x00, 0x03],
      ],
      true,
    ],
    [
      'user/pass, ATYP 0x01 only in the auth position',
      [[0x05, 0x02, 0x01, 0x00, 0x05, 0x00, 0x00, 0x07]],
      false,
    ],
    ['no auth, ATYP 0x00', [[0x05, 0x00, 0x05, 0x00, 0x00, 0x00]], false],
    ['cut before the ATYP', [[0x05, 0x00, 0x05, 0x00, 0x00]], false],
  ])('%s → %s', (_label, chunks, readable) => {
    expect(grantedReplyReadable(chunks.map((c) => Uint8Array.from(c)))).toBe(readable);
  });
});

// A handshake timed out at this point is the target's evidence (the proxy waits on it), at any other the
// proxy's own stall.
describe('awaitingConnectReply: the proxy answered everything before the CONNECT, nothing of its reply', () => {
  it.each<[string, number[][], boolean]>([
    ['nothing yet (the greeting unanswered)', [], false],
    ['half a method choice', [[0x05]], false],
    ['no authentication chosen', [[0x05, 0x00]], true],
    ['no authentication, split', [[0x05], [0x00]], true],
    ['user/password chosen, the credentials unanswered', [[0x05, 0x02]], false],
    ['user/password, half the status', [[0x05, 0x02, 0x01]], false],
    [
      'user/password, the credentials accepted',
      [
        [0x05, 0x02],
        [0x01, 0x00],
      ],
      true,
    ],
    ['user/password, the credentials refused', [[0x05, 0x02, 0x01, 0x01]], false],
    ['no acceptable method', [[0x05, 0xff]], false],
    ['a reply begun', [[0x05, 0x00, 0x05]], false],
    ['a reply begun after the credentials', [[0x05, 0x02, 0x01, 0x00, 0x05, 0x00]], false],
    ['not SOCKS5', [[...Buffer.from('HT')]], false],
  ])('%s → %s', (_label, chunks, awaiting) => {
    expect(awaitingConnectReply(chunks.map((c) => Uint8Array.from(c)))).toBe(awaiting);
  });
});
