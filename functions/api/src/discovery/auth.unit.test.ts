import { describe, expect, it } from 'vitest';
import { AuthConfigError, type Authenticator, type AuthOutcome } from '../auth/authenticator.js';
import {
  adminOnlyAuthenticator,
  CRAWLER_TOKEN_REFUSED,
  crawlerOrAdminAuthenticator,
  holderOf,
  parseCrawlerTokens,
} from './auth.js';

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
    // By its place: an entry written token:name would put the token where the name goes.
    ['a:short', 'entry 1'],
    [`a:${T1} x`, 'entry 1'],
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

describe('adminOnlyAuthenticator (admin-only routes)', () => {
  const ADMIN = 'admin-token-xxxxxxxxxxxx';
  const seen: Array<string | undefined> = [];
  const admin: Authenticator = {
    description: 'tokens(1)+google(1 emails)',
    async authenticate(token): Promise<AuthOutcome> {
      seen.push(token);
      if (token === ADMIN) return { ok: true, principal: { kind: 'token', name: 'ops' } };
      if (token === 'a.b.c') return { ok: false, code: 'forbidden', reason: 'x@example.com is not an admin' };
      if (token === 'u.n.a') return { ok: false, code: 'unavailable', reason: 'certs' };
      return { ok: false, code: 'unauthenticated', reason: 'invalid credential' };
    },
  };
  const auth = adminOnlyAuthenticator(parseCrawlerTokens(`a:${T1},b:${T2}`), admin);

  it.each([
    [ADMIN, { ok: true, principal: { kind: 'token', name: 'ops' } }],
    // A valid crawler token: a credential, but not one for here (RFC 6750 §3.1 insufficient_scope).
    [T1, { ok: false, code: 'forbidden', reason: CRAWLER_TOKEN_REFUSED }],
    [T2, { ok: false, code: 'forbidden', reason: CRAWLER_TOKEN_REFUSED }],
    // Unknown, near-miss, missing and oversized tokens stay the admin check's own 401.
    [`${T1}x`, { ok: false, code: 'unauthenticated', reason: 'invalid credential' }],
    [T1.slice(0, -1), { ok: false, code: 'unauthenticated', reason: 'invalid credential' }],
    [T1.toUpperCase(), { ok: false, code: 'unauthenticated', reason: 'invalid credential' }],
    [undefined, { ok: false, code: 'unauthenticated', reason: 'invalid credential' }],
    [
      `${'x'.repeat(20)}… (9000 characters)`,
      { ok: false, code: 'unauthenticated', reason: 'invalid credential' },
    ],
    // The admin check's other refusals are its own.
    ['a.b.c', { ok: false, code: 'forbidden', reason: 'x@example.com is not an admin' }],
    ['u.n.a', { ok: false, code: 'unavailable', reason: 'certs' }],
  ])('%s', async (token, outcome) => {
    const presented = token?.endsWith('(9000 characters)') ? 'x'.repeat(9000) : token;
    expect(await auth.authenticate(presented)).toEqual(outcome);
  });

  it('asks the admin authenticator first, about every token', async () => {
    seen.length = 0;
    await auth.authenticate(T1);
    await auth.authenticate(ADMIN);
    expect(seen).toEqual([T1, ADMIN]);
  });

  it('is the admin authenticator itself when no crawler token is configured', () => {
    expect(adminOnlyAuthenticator([], admin)).toBe(admin);
    expect(auth.description).toBe(admin.description);
  });
});
