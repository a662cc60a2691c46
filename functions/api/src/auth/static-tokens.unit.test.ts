import { describe, expect, it } from 'vitest';
import { AuthConfigError } from './authenticator.js';
import { parseAdminTokens, staticTokenAuthenticator } from './static-tokens.js';

const A = 'aaaaaaaaaaaaaaaaaaaaaaaa';
const B = 'bbbbbbbbbbbbbbbbbbbbbbbb';

describe('parseAdminTokens', () => {
  it('parses named tokens, ignoring blanks and spaces', () => {
    expect(parseAdminTokens(` ci:${A} , alice:${B},`)).toEqual([
      { name: 'ci', token: A },
      { name: 'alice', token: B },
    ]);
    expect(parseAdminTokens('')).toEqual([]);
  });

  it.each([
    [`${A}`, 'no name'],
    [`:${A}`, 'empty name'],
    [`c i:${A}`, 'bad name'],
    ['ci:short', 'short token'],
    [`ci:${A} x`, 'space in token'],
    [`ci:${A},ci:${B}`, 'duplicate name'],
    // Written token:name, the token fits a name and "ci" is a short token: the message names the place.
    [`${A}:ci`, 'token and name swapped'],
  ])('refuses %s (%s) without echoing the token', (value) => {
    let caught: unknown;
    try {
      parseAdminTokens(value);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AuthConfigError);
    expect((caught as Error).message).not.toContain(A);
    expect((caught as Error).message).not.toContain(B);
  });
});

describe('staticTokenAuthenticator', () => {
  const auth = staticTokenAuthenticator([
    { name: 'old', token: A },
    { name: 'new', token: B },
  ]);

  it('accepts every configured token (rotation) and names the one used', async () => {
    expect(await auth.authenticate(A)).toEqual({ ok: true, principal: { kind: 'token', name: 'old' } });
    expect(await auth.authenticate(B)).toEqual({ ok: true, principal: { kind: 'token', name: 'new' } });
  });

  it.each([[undefined], [''], [`${A}x`], [A.slice(1)], ['x'.repeat(5000)]])('refuses %s', async (token) => {
    expect(await auth.authenticate(token)).toMatchObject({ ok: false, code: 'unauthenticated' });
  });
});
