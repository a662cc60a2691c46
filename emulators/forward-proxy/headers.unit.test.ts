import { describe, expect, it } from 'vitest';
import { addLeakHeaders, endToEndHeaders, withHost } from './headers.js';

describe('endToEndHeaders', () => {
  it('drops hop-by-hop fields, proxy credentials and whatever Connection names, keeping order and case', () => {
    const raw = [
      'Host',
      'example.com',
      'Connection',
      'keep-alive, X-Hop',
      'Proxy-Connection',
      'keep-alive',
      'Proxy-Authorization',
      'Basic dTpw',
      'X-Hop',
      'drop me',
      'Keep-Alive',
      'timeout=5',
      'TE',
      'trailers',
      'Transfer-Encoding',
      'chunked',
      'Upgrade',
      'websocket',
      'Accept',
      'text/html',
      'accept',
      'application/json',
    ];
    expect(endToEndHeaders(raw)).toEqual([
      'Host',
      'example.com',
      'Accept',
      'text/html',
      'accept',
      'application/json',
    ]);
  });
});

describe('addLeakHeaders', () => {
  it('appends the client to an existing X-Forwarded-For chain and adds Via', () => {
    expect(addLeakHeaders(['Host', 'h', 'X-Forwarded-For', '10.0.0.1'], '127.0.0.1')).toEqual([
      'Host',
      'h',
      'X-Forwarded-For',
      '10.0.0.1, 127.0.0.1',
      'Via',
      '1.1 proxyplane',
    ]);
    expect(addLeakHeaders(['Host', 'h'], '127.0.0.9')).toEqual([
      'Host',
      'h',
      'X-Forwarded-For',
      '127.0.0.9',
      'Via',
      '1.1 proxyplane',
    ]);
  });
});

describe('withHost', () => {
  it.each([
    [
      'replaces the Host the client sent',
      ['Accept', '*/*', 'Host', 'other.example'],
      ['Host', 'a:8', 'Accept', '*/*'],
    ],
    [
      'drops every Host field, whatever its case',
      ['host', 'x', 'HOST', 'y', 'X-A', '1'],
      ['Host', 'a:8', 'X-A', '1'],
    ],
    ['adds one when there was none (HTTP/1.0)', ['X-A', '1'], ['Host', 'a:8', 'X-A', '1']],
  ])('%s', (_what, headers, expected) => {
    expect(withHost(headers, 'a:8')).toEqual(expected);
  });
});
