import { describe, expect, it } from 'vitest';
import { parseRequestHead } from './head.js';
import { mayRideWithConnect, requestTarget } from './request-target.js';

const target = (text: string) => requestTarget(parseRequestHead(text)!);

describe('requestTarget', () => {
  it.each([
    ['CONNECT example.com:443 HTTP/1.1', { kind: 'connect', authority: { host: 'example.com', port: 443 } }],
    ['CONNECT example.com HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_connect_target' }],
    // An IPv6 literal in its RFC 5952 text, whatever the spelling: what routes are matched against.
    [
      'CONNECT [2001:0DB8:0:0::1]:443 HTTP/1.1',
      { kind: 'connect', authority: { host: '2001:db8::1', port: 443 } },
    ],
    [
      'GET http://[2001:db8:0:0:0:0:0:1]:8080/a HTTP/1.1',
      expect.objectContaining({ kind: 'http', authority: { host: '2001:db8::1', port: 8080 } }),
    ],
    [
      'GET http://Example.com:8080/a?b HTTP/1.1',
      {
        kind: 'http',
        authority: { host: 'example.com', port: 8080 },
        path: '/a?b',
        hostHeader: 'Example.com:8080',
        bodyLength: 0,
      },
    ],
    [
      'POST http://example.com HTTP/1.1\r\nContent-Length: 12',
      {
        kind: 'http',
        authority: { host: 'example.com', port: 80 },
        path: '/',
        hostHeader: 'example.com',
        bodyLength: 12,
      },
    ],
    // Bracketed text of hex digits, colons and dots that is no IPv6 address: malformed, not a name to resolve.
    ['CONNECT [1::2::3]:443 HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_connect_target' }],
    ['CONNECT [....]:443 HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_connect_target' }],
    ['CONNECT [127.0.0.1::]:443 HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_connect_target' }],
    ['CONNECT [1:2:3:4:5:6:7]:443 HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_connect_target' }],
    ['GET http://[1::2::3]/ HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request_target' }],
    ['GET http://[....]:8080/a HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request_target' }],
    [
      // An IPv4-mapped literal is the IPv4 address it maps: one site, one route, however it is spelt.
      'CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1',
      { kind: 'connect', authority: { host: '127.0.0.1', port: 443 } },
    ],
    ['GET /local HTTP/1.1', { kind: 'refuse', status: 400, code: 'not_a_proxy_request' }],
    ['GET https://example.com/ HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request_target' }],
    [
      'POST http://e.com/ HTTP/1.1\r\nTransfer-Encoding: chunked',
      { kind: 'refuse', status: 411, code: 'chunked_request_body_unsupported' },
    ],
    [
      'POST http://e.com/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2',
      { kind: 'refuse', status: 400, code: 'bad_content_length' },
    ],
    [
      'POST http://e.com/ HTTP/1.1\r\nContent-Length: -1',
      { kind: 'refuse', status: 400, code: 'bad_content_length' },
    ],
    // Valid tokens, but a server that maps '_' to '-' (CGI, WSGI) would frame or route by them.
    [
      'POST http://e.com/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer_Encoding: chunked',
      { kind: 'refuse', status: 400, code: 'bad_request' },
    ],
    [
      'GET http://e.com/ HTTP/1.1\r\nCONTENT_length: 40',
      { kind: 'refuse', status: 400, code: 'bad_request' },
    ],
    ['GET http://e.com/ HTTP/1.1\r\nHost: e.com\r\nHost_: x', expect.objectContaining({ kind: 'http' })],
    // A latin1 0xA0 (U+00A0) is no optional whitespace: String#trim took it, the gateway read 5, and the
    // raw line went on to a pinned target as "5\xA0".
    [
      'POST http://e.com/ HTTP/1.1\r\nContent-Length: 5\u00a0',
      { kind: 'refuse', status: 400, code: 'bad_content_length' },
    ],
    [
      'POST http://e.com/ HTTP/1.1\r\nContent-Length: \u00a05',
      { kind: 'refuse', status: 400, code: 'bad_content_length' },
    ],
    // Node's client would upper-case it: an upstream CONNECT to "http://e.com/" (docs/gateway.md § Proxy listener).
    ['connect http://e.com/ HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request' }],
    ['Connect http://e.com:443/ HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request' }],
    // An upstream answering TRACE itself would echo our Proxy-Authorization for it (as on /v1/fetch).
    ['TRACE http://e.com/ HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request' }],
    ['trace http://e.com/ HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request' }],
    ['TRACK http://e.com/ HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request' }],
    // Forwarded both, the target or an upstream could read either (RFC 9112 §3.2).
    [
      'GET http://e.com/ HTTP/1.1\r\nHost: e.com\r\nHost: 169.254.169.254',
      { kind: 'refuse', status: 400, code: 'bad_request' },
    ],
    [
      'GET http://e.com/ HTTP/1.1\r\nHost: e.com\r\nX-A: 1\r\nhost: e.com',
      { kind: 'refuse', status: 400, code: 'bad_request' },
    ],
  ])('%s', (text, expected) => {
    expect(target(text)).toEqual(expected);
  });

  // Hosts squid reads as an address of its own (inet_aton; every trailing dot dropped), while a resolver
  // answering made-up names gave the guard a public address to judge: malformed here, never resolved.
  it.each([
    'http://0x7f.1/',
    'http://127.1/',
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://127.0.0.1../',
    'http://example.com../',
    'http://a..b/',
  ])('refuses GET %s as a malformed target', (url) => {
    expect(target(`GET ${url} HTTP/1.1`)).toEqual({
      kind: 'refuse',
      status: 400,
      code: 'bad_request_target',
    });
  });

  it.each(['0x7f.1:443', '127.0.0.1..:443', '2130706433:443'])('refuses CONNECT %s', (authority) => {
    expect(target(`CONNECT ${authority} HTTP/1.1`)).toEqual({
      kind: 'refuse',
      status: 400,
      code: 'bad_connect_target',
    });
  });

  it.each([
    ['http://example.com./', 'example.com'],
    ['http://1.2.3.4/', '1.2.3.4'],
    ['http://1.2.3.4./', '1.2.3.4'],
    ['http://a1.example/', 'a1.example'],
    ['http://123.example/', '123.example'],
    ['http://0x7f.example/', '0x7f.example'],
  ])('still takes GET %s', (url, host) => {
    expect(target(`GET ${url} HTTP/1.1`)).toEqual(
      expect.objectContaining({ kind: 'http', authority: { host, port: 80 } }),
    );
  });
});

describe('mayRideWithConnect', () => {
  const names = (text: string, hostHeader: string, host: string, port: number) =>
    mayRideWithConnect(parseRequestHead(text)!, hostHeader, host, port);

  it.each<[string, string, string, string, number, boolean]>([
    ['no Host field', 'GET http://192.0.2.1/ HTTP/1.1', '192.0.2.1', '192.0.2.1', 80, true],
    [
      'the same text',
      'GET http://192.0.2.1/ HTTP/1.1\r\nHost: 192.0.2.1',
      '192.0.2.1',
      '192.0.2.1',
      80,
      true,
    ],
    [
      'the default port spelt out',
      'GET http://192.0.2.1/ HTTP/1.1\r\nHost: 192.0.2.1:80',
      '192.0.2.1',
      '192.0.2.1',
      80,
      true,
    ],
    ['IPv6', 'GET http://[::2]/ HTTP/1.1\r\nHost: [::2]:80', '[::2]', '::2', 80, true],
    ['IPv6 spelt otherwise', 'GET http://[::2]/ HTTP/1.1\r\nHost: [0::2]', '[::2]', '::2', 80, true],
    [
      'another host',
      'GET http://192.0.2.1/ HTTP/1.1\r\nHost: 169.254.169.254',
      '192.0.2.1',
      '192.0.2.1',
      80,
      false,
    ],
    [
      'another port',
      'GET http://192.0.2.1/ HTTP/1.1\r\nHost: 192.0.2.1:8080',
      '192.0.2.1',
      '192.0.2.1',
      80,
      false,
    ],
    [
      'a host with a path',
      'GET http://192.0.2.1/ HTTP/1.1\r\nHost: 192.0.2.1/x',
      '192.0.2.1',
      '192.0.2.1',
      80,
      false,
    ],
    ['an empty Host', 'GET http://192.0.2.1/ HTTP/1.1\r\nHost: ', '192.0.2.1', '192.0.2.1', 80, false],
    // A name: the upstream could resolve it again, to whatever the name's DNS answers by then.
    ['a name, no Host field', 'GET http://e.com/ HTTP/1.1', 'e.com', 'e.com', 80, false],
    ['a name and the same Host', 'GET http://e.com/ HTTP/1.1\r\nHost: e.com', 'e.com', 'e.com', 80, false],
    [
      'a name, a trailing dot',
      'GET http://e.com:81/ HTTP/1.1\r\nHost: e.com.:81',
      'e.com:81',
      'e.com',
      81,
      false,
    ],
  ])('%s → %s', (_label, text, hostHeader, host, port, expected) => {
    expect(names(text, hostHeader, host, port)).toBe(expected);
  });
});
