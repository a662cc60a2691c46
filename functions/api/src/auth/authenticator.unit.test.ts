import { describe, expect, it } from 'vitest';
import { type AuthOutcome, anyOf, bearerToken, MAX_TOKEN_LENGTH } from './authenticator.js';

describe('bearerToken', () => {
  it.each([
    ['Bearer abc.def-ghi_jkl', 'abc.def-ghi_jkl'],
    ['bearer abc', 'abc'],
    ['Bearer   abc  ', 'abc'],
    ['Bearer abc==', 'abc=='],
    ['Basic YWxhZGRpbjpvcGVuc2VzYW1l', undefined],
    ['Bearer', undefined],
    ['Bearer a b', undefined],
    ['Bearer a"b', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('%s → %s', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
});

describe('anyOf', () => {
  const fixed = (name: string, recognises: (t: string) => boolean, outcome: AuthOutcome) => ({
    description: name,
    recognises,
    authenticate: async () => outcome,
  });
  const deny: AuthOutcome = { ok: false, code: 'unauthenticated', reason: 'no' };

  it('lets the first authenticator that recognises and accepts the token decide', async () => {
    const auth = anyOf([
      fixed('tokens', () => true, deny),
      fixed('google', (t) => t.includes('.'), { ok: true, principal: { kind: 'google', email: 'a@b.c' } }),
    ]);
    expect(auth.description).toBe('tokens+google');
    expect(await auth.authenticate('x.y.z')).toMatchObject({ ok: true });
    expect(await auth.authenticate('xyz')).toMatchObject({ ok: false, code: 'unauthenticated' });
  });

  it('stops at a forbidden or unavailable outcome instead of trying the next one', async () => {
    const forbidden: AuthOutcome = { ok: false, code: 'forbidden', reason: 'not an admin' };
    const auth = anyOf([
      fixed('a', () => true, forbidden),
      fixed('b', () => true, { ok: true, principal: { kind: 'local' } }),
    ]);
    expect(await auth.authenticate('t')).toEqual(forbidden);
  });

  it('refuses a missing or oversized token before asking anyone', async () => {
    const auth = anyOf([fixed('any', () => true, { ok: true, principal: { kind: 'local' } })]);
    expect(await auth.authenticate(undefined)).toMatchObject({ ok: false, code: 'unauthenticated' });
    expect(await auth.authenticate('x'.repeat(MAX_TOKEN_LENGTH + 1))).toMatchObject({ ok: false });
  });
});
