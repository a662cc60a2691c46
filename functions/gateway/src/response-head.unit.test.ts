import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  type BodyFraming,
  bodyFraming,
  clientResponseHead,
  codedBeyondChunked,
  connectionListed,
  endsChunked,
  isProxyChallenge,
  isProxyErrorPage,
} from './response-head.js';

describe('connectionListed', () => {
  it('is the set of the tokens every Connection field lists, lower-cased, without empty ones', () => {
    expect(connectionListed(['Content-Type', 'text/plain'])).toBeNull();
    const listed = connectionListed(['Connection', ' Keep-Alive ,, X-Hop,', 'A', 'b', 'connection', 'x-two']);
    expect([...listed!].sort()).toEqual(['keep-alive', 'x-hop', 'x-two']);
    // 30,000 empty tokens are no tokens at all: the set stays empty, whatever the head's length.
    expect(connectionListed(['Connection', ','.repeat(30_000)])!.size).toBe(0);
  });
});

describe('bodyFraming', () => {
  it.each<[string | undefined, boolean, boolean, BodyFraming]>([
    ['chunked', false, true, 'rechunk'],
    ['gzip, chunked', false, true, 'rechunk'],
    ['Chunked', false, false, 'dechunked'],
    ['chunked', true, true, 'as-is'], // HEAD, 204, 304: no body whatever the fields say
    ['gzip', false, true, 'as-is'], // not chunked last: close-delimited, bytes as they come
    [undefined, false, true, 'as-is'],
  ])('TE %s, noBody %s, HTTP/1.1 client %s → %s', (te, noBody, http11, framing) => {
    expect(bodyFraming(te, noBody, http11)).toBe(framing);
  });

  it('reads the last coding only', () => {
    expect(endsChunked('chunked, gzip')).toBe(false);
    expect(endsChunked('xchunked')).toBe(false);
    expect(endsChunked(undefined)).toBe(false);
  });
});

describe('codedBeyondChunked', () => {
  it.each([
    ['gzip, chunked', true],
    ['gzip', true],
    ['chunked, identity', true],
    ['chunked', false],
    [' Chunked ', false],
    // Obsolete, an old server's: it codes nothing, and Node reads the body to the close as it is.
    ['identity', false],
    [undefined, false],
  ])('%j → %s', (te, coded) => expect(codedBeyondChunked(te)).toBe(coded));
});

describe('clientResponseHead', () => {
  const raw = [
    'Content-Type',
    'text/html',
    'Connection',
    'keep-alive, X-Hop',
    'Keep-Alive',
    'timeout=5',
    'X-Hop',
    'drop me',
    'Transfer-Encoding',
    'chunked',
    'Set-Cookie',
    'a=1',
    'set-cookie',
    'b=2',
    'Proxy-Authenticate',
    'Basic realm="up"',
  ];

  it('drops the upstream hop’s fields, keeps the rest in order and case, and closes', () => {
    expect(clientResponseHead(200, 'OK', raw, 'rechunk')).toBe(
      'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n' +
        'Set-Cookie: a=1\r\nset-cookie: b=2\r\nConnection: close\r\n\r\n',
    );
  });

  it('keeps the fields that frame the body even when Connection lists them', () => {
    const listed = ['Connection', 'Transfer-Encoding, Content-Length, X-Hop', 'X-Hop', 'x'];
    expect(clientResponseHead(200, 'OK', [...listed, 'Transfer-Encoding', 'chunked'], 'rechunk')).toBe(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
    );
    // The pinned path relays the body byte for byte: its framing must reach the client with it.
    expect(clientResponseHead(200, 'OK', [...listed, 'Content-Length', '5'], 'as-is')).toBe(
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n',
    );
  });

  it('drops a target’s X-Proxyplane-* fields: they are the gateway’s alone (its refusals carry them)', () => {
    const forged = ['X-Proxyplane-Error', 'no_upstream', 'x-proxyplane-reason', 'x', 'X-Other', 'kept'];
    expect(clientResponseHead(403, 'Forbidden', forged, 'as-is')).toBe(
      'HTTP/1.1 403 Forbidden\r\nX-Other: kept\r\nConnection: close\r\n\r\n',
    );
  });

  it('a 1xx head passes without closing', () => {
    expect(clientResponseHead(100, 'Continue', ['Connection', 'keep-alive'], 'interim')).toBe(
      'HTTP/1.1 100 Continue\r\n\r\n',
    );
  });

  it('an HTTP/1.0 client gets a de-chunked body without Transfer-Encoding', () => {
    expect(clientResponseHead(404, '', ['Transfer-Encoding', 'chunked'], 'dechunked')).toBe(
      'HTTP/1.1 404 \r\nConnection: close\r\n\r\n',
    );
  });
});

describe('isProxyChallenge', () => {
  const res = (statusCode: number, headers: Record<string, string>) =>
    ({ statusCode, headers }) as unknown as IncomingMessage;
  it('is the upstream refusing our credentials only for a 407 that carries Proxy-Authenticate', () => {
    expect(isProxyChallenge(res(407, { 'proxy-authenticate': 'Basic realm="squid"' }))).toBe(true);
    expect(isProxyChallenge(res(407, {}))).toBe(false); // a target's 407, relayed without the other hop's field
    expect(isProxyChallenge(res(401, { 'proxy-authenticate': 'Basic' }))).toBe(false);
  });
});

describe('isProxyErrorPage', () => {
  const res = (headers: Record<string, string>) =>
    ({ statusCode: 503, headers }) as unknown as IncomingMessage;
  it("is squid's own page (X-Squid-Error), not a target's 5xx relayed", () => {
    expect(isProxyErrorPage(res({ 'x-squid-error': 'ERR_CONNECT_FAIL 111' }))).toBe(true);
    expect(isProxyErrorPage(res({ 'content-type': 'text/html' }))).toBe(false);
  });
});
