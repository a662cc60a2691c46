import { describe, expect, it } from 'vitest';
import { AuthConfigError, type Authenticator, type AuthOutcome } from '../auth/authenticator.js';
import { crawlerOrAdminAuthenticator, holderOf, parseCrawlerTokens } from './auth.js';

const T1 = 'crawler-token-aaaaaaaaaaaa';
const T2 = 'crawler-token-bbbbbbbbbbbb';

describe('parseCrawlerTokens', () => {
  it.each([
    ['', []],
    [undefined, []],
    [`a:${T1}`, [{ name: 'a', token: T1 }]],
    [
      ` a:${T1} , b:${T2} ,`,
      [
        { name: 'a', token: T1 },
        { name: 'b', token: T2 },
      ],
    ],
  ])('%j', (value, tokens) => {
    expect(parseCrawlerTokens(value)).toEqual(tokens);
  });

  it.each([
    [`${T1}`, 'entry 1'],
    [`:${T1}`, 'entry 1'],
    [`bad name:${T1}`, 'entry 1'],
    ['a:short', '"a"'],
    [`a:${T1} x`, '"a"'],
    [`a:${T1},a:${T2}`, 'unique'],
  ])('refuses %j naming %s, never the token', (value, message) => {
    expect(() => parseCrawlerTokens(value)).toThrow(AuthConfigError);
    expect(() => parseCrawlerTokens(value)).toThrow(message);
    try {
      parseCrawlerTokens(value);
    } catch (err) {
      expect((err as Error).message).not.toContain(T1);
    }
  });
});

describe('crawlerOrAdminAuthenticator', () => {
  const seen: Array<string | undefined> = [];
  const admin: Authenticator = {
    description: 'tokens(1)',
    async authenticate(token): Promise<AuthOutcome> {
      seen.push(token);
      return token === 'admin-token-xxxxxxxxxxxx'
        ? { ok: true, principal: { kind: 'token', name: 'ops' } }
        : { ok: false, code: 'unauthenticated', reason: 'unknown token' };
    },
  };
  const auth = crawlerOrAdminAuthenticator(parseCrawlerTokens(`a:${T1},b:${T2}`), admin);

  it.each([
    [T1, { ok: true, principal: { kind: 'token', name: 'crawler:a' } }],
    [T2, { ok: true, principal: { kind: 'token', name: 'crawler:b' } }],
    ['admin-token-xxxxxxxxxxxx', { ok: true, principal: { kind: 'token', name: 'ops' } }],
    [`${T1}x`, { ok: false, code: 'unauthenticated' }],
    [undefined, { ok: false, code: 'unauthenticated' }],
  ])('%s', async (token, outcome) => {
    expect(await auth.authenticate(token)).toMatchObject(outcome);
  });

  it('does not ask the admin authenticator about a crawler token', async () => {
    seen.length = 0;
    await auth.authenticate(T1);
    expect(seen).toEqual([]);
  });

  it('names lease holders without secrets', () => {
    expect(holderOf({ kind: 'token', name: 'crawler:a' })).toBe('crawler:a');
    expect(holderOf({ kind: 'google', email: 'ops@example.com' })).toBe('ops@example.com');
    expect(holderOf({ kind: 'local' })).toBe('local');
    expect(holderOf(undefined)).toBe('anonymous');
  });
});
