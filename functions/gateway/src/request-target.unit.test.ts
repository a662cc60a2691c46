import { describe, expect, it } from 'vitest';
import { parseRequestHead } from './head.js';
import { requestTarget } from './request-target.js';

const target = (text: string) => requestTarget(parseRequestHead(text)!);

describe('requestTarget', () => {
  it.each([
    ['CONNECT example.com:443 HTTP/1.1', { kind: 'connect', authority: { host: 'example.com', port: 443 } }],
    ['CONNECT example.com HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_connect_target' }],
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
    // Node's client would upper-case it: an upstream CONNECT to "http://e.com/" (docs/gateway.md § Proxy listener).
    ['connect http://e.com/ HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request' }],
    ['Connect http://e.com:443/ HTTP/1.1', { kind: 'refuse', status: 400, code: 'bad_request' }],
  ])('%s', (text, expected) => {
    expect(target(text)).toEqual(expected);
  });
});
