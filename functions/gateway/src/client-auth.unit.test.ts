import { describe, expect, it } from 'vitest';
import { ClientAuth } from './client-auth.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const basic = (s: string) => `Basic ${b64(s)}`;

describe('ClientAuth', () => {
  const auth = new ClientAuth([{ username: 'crawler', password: 'p:w' }], ['tok-1', 'tok-2']);

  it.each([
    ['the right password', basic('crawler:p:w'), 'crawler'],
    ['a lower-case scheme', `basic ${Buffer.from('crawler:p:w').toString('base64')}`, 'crawler'],
    ['a wrong password', basic('crawler:p:x'), null],
    ['an unknown user', basic('other:p:w'), null],
    ['no colon', basic('crawler'), null],
    ['another scheme', 'Bearer tok-1', null],
    ['nothing', undefined, null],
    ['several spaces after the scheme', `Basic   ${b64('crawler:p:w')}`, 'crawler'],
    ['no padding', `Basic ${b64('crawler:p:w').replace(/=+$/, '')}`, 'crawler'],
    // Node's decoder stops at the first '=' and skips what is not base64: each of these decoded to
    // "crawler:p:w" and let the request in.
    ['anything after the padding', `Basic ${b64('crawler:p:w')}Zm9v`, null],
    ['spaces inside the token', `Basic ${b64('crawler:p:w').split('').join(' ')}`, null],
    ['a second credential after a comma', `Basic ${b64('crawler:p:w')}, Basic ${b64('x:y')}`, null],
    ['base64url characters', `Basic ${b64('crawler:p:w')}-_`, null],
    ['malformed base64', 'Basic !!!!', null],
    ['a very long value', `Basic ${'A'.repeat(100_000)}`, null],
  ])('basic with %s', (_label, header, user) => {
    expect(auth.basic(header)).toBe(user);
  });

  // Each token a caller of its own (its sticky keys and share of the sticky table), named by its place in
  // GATEWAY_FETCH_TOKENS, never by the secret: all bearer callers were one anonymous caller, "".
  it.each([
    ['Bearer tok-1', 'bearer:0'],
    ['bearer tok-1', 'bearer:0'],
    ['Bearer tok-2', 'bearer:1'],
    ['Bearer tok-3', null],
    [basic('crawler:p:w'), null],
    [undefined, null],
  ])('bearer %s → %s', (header, who) => {
    expect(auth.bearer(header)).toBe(who);
  });

  it('remembers a verified credential in its canonical spelling only', () => {
    // "crawler:p:w" is 11 bytes: its base64 ends in "nc=", whose "c" carries 2 unused bits — "nd=", "ne="
    // and "nf=" decode the same; so do the unpadded form, and any case of the scheme.
    const a = new ClientAuth([{ username: 'crawler', password: 'p:w' }], []);
    const token = b64('crawler:p:w');
    const spellings = [
      ...Array.from({ length: 50 }, (_, n) => `Basic${' '.repeat(n + 1)}${token}`),
      ...['basic', 'BASIC', 'bAsIc'].map((scheme) => `${scheme} ${token}`),
      `Basic ${token.replace(/=+$/, '')}`,
      ...['d', 'e', 'f'].map((c) => `Basic ${token.replace(/c=$/, `${c}=`)}`),
    ];
    for (const header of spellings) expect(a.basic(header)).toBe('crawler');
    // The cache is private: read through TypeScript's element-access escape hatch.
    expect(a['verified'].size).toBe(1);
    expect([...a['verified'].keys()]).toEqual([basic('crawler:p:w')]);
  });

  it('lets everything through only when auth is explicitly off', () => {
    const open = new ClientAuth([], [], false);
    expect(open.basic(undefined)).toBe('');
    expect(open.bearer(undefined)).toBe('');
  });
});
