import { describe, expect, it } from 'vitest';
import { parseAbsoluteTarget, parseAuthority } from './target.js';

describe('parseAuthority (CONNECT)', () => {
  it.each([
    ['example.com:443', { host: 'example.com', port: 443 }],
    ['127.0.0.1:8080', { host: '127.0.0.1', port: 8080 }],
    ['[::1]:443', { host: '::1', port: 443 }],
    ['a-b.c:1', { host: 'a-b.c', port: 1 }],
  ])('%s', (input, expected) => {
    expect(parseAuthority(input)).toEqual(expected);
  });

  it.each([
    'example.com',
    ':443',
    'example.com:',
    'example.com:0',
    'example.com:65536',
    'exa mple.com:443',
    '[::1]443',
    'host:44x',
    '/path',
  ])('rejects %s', (input) => {
    expect(parseAuthority(input)).toBeNull();
  });
});

describe('parseAbsoluteTarget (absolute-form)', () => {
  it.each([
    ['http://example.com/a?b=1', { host: 'example.com', port: 80, path: '/a?b=1', authority: 'example.com' }],
    ['http://127.0.0.1:8080', { host: '127.0.0.1', port: 8080, path: '/', authority: '127.0.0.1:8080' }],
    ['HTTP://Example.com/x', { host: 'example.com', port: 80, path: '/x', authority: 'example.com' }],
    ['http://[::1]:81/', { host: '::1', port: 81, path: '/', authority: '[::1]:81' }],
    ['http://example.com:80/', { host: 'example.com', port: 80, path: '/', authority: 'example.com' }],
  ])('%s', (input, expected) => {
    expect(parseAbsoluteTarget(input)).toEqual(expected);
  });

  it.each([undefined, '/origin-form', 'https://example.com/', 'ftp://x/', 'http://', 'http://user:pw@host/'])(
    'rejects %s',
    (input) => {
      expect(parseAbsoluteTarget(input)).toBeNull();
    },
  );
});
