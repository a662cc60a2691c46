import { describe, expect, it } from 'vitest';
import { isMatchableHostPattern } from '../../../shared/src/domain/gateway/routing.js';
import {
  absoluteUrl,
  formatAuthority,
  forwardedHeaders,
  header,
  originFormHead,
  parseAbsoluteHttp,
  parseAuthority,
  parseRequestHead,
  statusOf,
} from './head.js';

describe('parseRequestHead', () => {
  it('reads the request line and headers', () => {
    const h = parseRequestHead(
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization:  Basic abc \r\nX-A: 1',
    );
    expect(h).toMatchObject({ method: 'CONNECT', target: 'example.com:443', version: 'HTTP/1.1' });
    expect(header(h!, 'proxy-authorization')).toBe('Basic abc');
    expect(h!.lines[0]).toBe('Host: example.com:443');
  });

  it.each([
    ['no target', 'GET HTTP/1.1'],
    ['extra space', 'GET  / HTTP/1.1'],
    ['HTTP/2 line', 'GET / HTTP/2.0'],
    ['folded header', 'GET / HTTP/1.1\r\nA: 1\r\n b'],
    ['no colon', 'GET / HTTP/1.1\r\nnonsense'],
    ['space in a name', 'GET / HTTP/1.1\r\nBad Name: 1'],
    ['too many headers', `GET / HTTP/1.1${'\r\nA: 1'.repeat(129)}`],
    [
      'a bare CR in a value (a second field to a CR-splitting target)',
      'GET / HTTP/1.1\r\nX-A: x\rTransfer-Encoding: chunked',
    ],
    ['a bare LF in a value', 'GET / HTTP/1.1\r\nX-A: x\nTransfer-Encoding: chunked'],
    ['a bare CR at the end of a value', 'GET / HTTP/1.1\r\nX-A: x\r'],
    ['a bare CR in the request line', 'GET /\r HTTP/1.1\r\nX-A: 1'],
    [
      'an HTAB in the request target (a separator to a target splitting on whitespace)',
      'GET /a\tHTTP/1.0 HTTP/1.1',
    ],
    ['a NUL in a value', 'GET / HTTP/1.1\r\nX-A: a\u0000b'],
    ['an ESC in a value', 'GET / HTTP/1.1\r\nX-A: a\u001bb'],
    ['a DEL in a value', 'GET / HTTP/1.1\r\nX-A: a\u007fb'],
  ])('refuses %s', (_label, text) => {
    expect(parseRequestHead(text)).toBeNull();
  });

  it('keeps HTAB and obs-text in values (RFC 9110 §5.5)', () => {
    const h = parseRequestHead('GET / HTTP/1.1\r\nX-A: a\tb\u00e9\r\nX-B:\t1');
    expect(h?.values).toEqual(['a\tb\u00e9', '1']);
  });
});

describe('parseAuthority', () => {
  it.each([
    ['example.com:443', undefined, { host: 'example.com', port: 443 }],
    ['Example.COM.:8080', undefined, { host: 'example.com', port: 8080 }],
    ['[::1]:443', undefined, { host: '::1', port: 443 }],
    ['example.com', 80, { host: 'example.com', port: 80 }],
    ['example.com', undefined, null],
    ['example.com:0', undefined, null],
    ['example.com:65536', undefined, null],
    ['user@example.com:80', undefined, null],
    ['exa mple.com:80', undefined, null],
    ['[::1:80', undefined, null],
    ['example.com:80x', undefined, null],
    ['0x7f.1:80', undefined, null],
    ['127.1:80', undefined, null],
    ['2130706433:80', undefined, null],
    ['0177.0.0.1:80', undefined, null],
    ['1.2.3.4.5:80', undefined, null],
    ['example.0x:80', undefined, null],
    ['127.0.0.1..:80', undefined, null],
    ['example.com..:80', undefined, null],
    ['a..b:80', undefined, null],
    ['127.0.0.1.:80', undefined, { host: '127.0.0.1', port: 80 }],
    ['123.example:80', undefined, { host: '123.example', port: 80 }],
    ['0x7f.example:80', undefined, { host: '0x7f.example', port: 80 }],
  ])('%s → %j', (text, def, expected) => {
    expect(parseAuthority(text, def)).toEqual(expected);
  });
});

// Route hosts and request targets are held to one rule (isNoDnsName, ip.ts): a route host the API refuses
// is one the proxy listener refuses as a target, and the other way round — a route no request could match,
// or one /v1/fetch and the listener would read differently, is never stored.
describe('route hosts and proxy listener targets agree', () => {
  it.each([
    ['example.com', true],
    ['example.com.', true],
    ['123.example', true],
    ['0x7f.example', true],
    ['a1.example', true],
    ['example.0xg', true],
    ['_acme.example', true],
    ['localhost', true],
    ['10.0.0.1', true],
    ['255.255.255.255', true],
    ['0x7f.1', false],
    ['127.1', false],
    ['2130706433', false],
    ['0177.0.0.1', false],
    ['010.0.0.1', false],
    ['1.2.3', false],
    ['1.2.3.4.5', false],
    ['1.2.3.256', false],
    ['example.0x', false],
    ['example.123', false],
    ['a..b', false],
    ['example.com..', false],
    ['127.0.0.1..', false],
    ['.example', false],
  ])('%j: taken by both = %s', (host, taken) => {
    expect(isMatchableHostPattern(host)).toBe(taken);
    expect(parseAuthority(`${host}:80`) !== null).toBe(taken);
  });
});

describe('parseAbsoluteHttp', () => {
  it.each([
    ['http://example.com/a%20b?q=1#frag', { host: 'example.com', port: 80 }, '/a%20b?q=1'],
    ['HTTP://example.com:8080', { host: 'example.com', port: 8080 }, '/'],
    ['http://[::1]:81?x', { host: '::1', port: 81 }, '/?x'],
  ])('%s', (target, authority, path) => {
    expect(parseAbsoluteHttp(target)).toEqual({ authority, path });
  });

  it.each(['https://example.com/', '/relative', 'http://user:pw@example.com/', 'http:///x'])(
    'refuses %s',
    (t) => {
      expect(parseAbsoluteHttp(t)).toBeNull();
    },
  );
});

describe('helpers', () => {
  it('formats CONNECT authorities and reads status lines', () => {
    expect(formatAuthority('10.0.0.1', 80)).toBe('10.0.0.1:80');
    expect(formatAuthority('2001:db8::1', 443)).toBe('[2001:db8::1]:443');
    expect(statusOf(Buffer.from('HTTP/1.1 407 Proxy Auth\r\n'))).toBe(407);
    expect(statusOf(Buffer.from('HTTP/1.0 200'))).toBe(200);
    expect(statusOf(Buffer.from('HTTP/1.1 20'))).toBe(0);
    expect(statusOf(Buffer.from('SSH-2.0-OpenSSH'))).toBe(0);
    // Three digits: Number() read these as 200 and 100.
    expect(statusOf(Buffer.from('HTTP/1.1 2e2 OK\r\n'))).toBe(0);
    expect(statusOf(Buffer.from('HTTP/1.1 1E2 X\r\n'))).toBe(0);
    expect(statusOf(Buffer.from('HTTP/1.1 +20 X\r\n'))).toBe(0);
    expect(statusOf(Buffer.from('HTTP/1.1 099 X\r\n'))).toBe(0);
    expect(statusOf(Buffer.from('HTTP/1.1 599 X\r\n'))).toBe(599);
  });

  it('trims only SP and HTAB around a field value (RFC 9110 §5.5), never obs-text such as 0xA0', () => {
    const h = parseRequestHead('GET http://e.com/ HTTP/1.1\r\nX-A: \t v \u00a0\t \r\nX-B:\u00a0w');
    expect(header(h!, 'x-a')).toBe('v \u00a0');
    expect(header(h!, 'x-b')).toBe('\u00a0w');
  });
});

describe('forwarded heads', () => {
  const h = parseRequestHead(
    'GET http://example.com:8080/a?b HTTP/1.1\r\nHost: example.com:8080\r\nProxy-Authorization: Basic Y2xpZW50\r\n' +
      'Connection: keep-alive, X-Drop\r\nX-Drop: 1\r\nAccept: */*',
  )!;

  it('origin-form inside a pinned tunnel: no proxy credentials, no hop-by-hop, Connection: close', () => {
    expect(originFormHead(h, '/a?b', 'example.com:8080')).toBe(
      'GET /a?b HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n',
    );
  });

  it.each([
    [{ host: 'example.com', port: 8080 }, 'http://example.com:8080/a?b'],
    [{ host: 'example.com', port: 80 }, 'http://example.com/a?b'],
    [{ host: '2001:db8::1', port: 80 }, 'http://[2001:db8::1]/a?b'],
  ])('absolute-form target for an upstream that filters destinations: %o → %s', (a, url) => {
    expect(absoluteUrl(a, '/a?b')).toBe(url);
  });

  it('headers for the upstream hop: end-to-end ones in order with their case, then our credentials', () => {
    expect(forwardedHeaders(h, 'x', 'Basic dXA6cA==')).toEqual([
      'Host',
      'example.com:8080',
      'Accept',
      '*/*',
      'Proxy-Authorization',
      'Basic dXA6cA==',
    ]);
    const noHost = parseRequestHead('GET http://a.example/ HTTP/1.0\r\nX-Y:  v ')!;
    expect(forwardedHeaders(noHost, 'a.example', '')).toEqual(['X-Y', 'v', 'Host', 'a.example']);
  });

  it('a Connection list never removes the framing or the target: the body stays framed (no smuggling)', () => {
    const listed = parseRequestHead(
      'GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nConnection: content-length, host, X-Drop\r\n' +
        'Content-Length: 5\r\nX-Drop: 1',
    )!;
    expect(forwardedHeaders(listed, 'x', '')).toEqual(['Host', 'example.com', 'Content-Length', '5']);
    expect(originFormHead(listed, '/', 'x')).toBe(
      'GET / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\nConnection: close\r\n\r\n',
    );
  });

  it('every Connection header counts: a field listed in a second one is as hop-by-hop as in the first', () => {
    const two = parseRequestHead(
      'GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive\r\nX-Hop: 1\r\n' +
        'connection: X-Hop\r\nAccept: */*',
    )!;
    expect(forwardedHeaders(two, 'x', '')).toEqual(['Host', 'example.com', 'Accept', '*/*']);
    expect(originFormHead(two, '/', 'x')).toBe(
      'GET / HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n',
    );
  });

  it.each([
    ['HTTP/1.0', []],
    ['HTTP/1.1', ['Expect', '100-continue']],
  ])("an %s client's Expect: dropped for HTTP/1.0 (RFC 9110 §10.1.1), kept for HTTP/1.1", (v, expect100) => {
    const h = parseRequestHead(`GET http://a.example/ ${v}\r\nHost: a.example\r\nExpect: 100-continue`)!;
    expect(forwardedHeaders(h, 'x', '')).toEqual(['Host', 'a.example', ...expect100]);
    const line = expect100.length ? 'Expect: 100-continue\r\n' : '';
    expect(originFormHead(h, '/', 'x')).toBe(
      `GET / ${v}\r\nHost: a.example\r\n${line}Connection: close\r\n\r\n`,
    );
  });
});
