import { describe, expect, it } from 'vitest';
import { ClientAuth } from './client-auth.js';

const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

describe('ClientAuth', () => {
  const auth = new ClientAuth([{ username: 'crawler', password: 'p:w' }], ['tok-1']);

  it.each([
    ['the right password', basic('crawler:p:w'), 'crawler'],
    ['a lower-case scheme', `basic ${Buffer.from('crawler:p:w').toString('base64')}`, 'crawler'],
    ['a wrong password', basic('crawler:p:x'), null],
    ['an unknown user', basic('other:p:w'), null],
    ['no colon', basic('crawler'), null],
    ['another scheme', 'Bearer tok-1', null],
    ['nothing', undefined, null],
  ])('basic with %s', (_label, header, user) => {
    expect(auth.basic(header)).toBe(user);
  });

  it.each([
    ['Bearer tok-1', true],
    ['bearer tok-1', true],
    ['Bearer tok-2', false],
    [basic('crawler:p:w'), false],
    [undefined, false],
  ])('bearer %s → %s', (header, ok) => {
    expect(auth.bearer(header)).toBe(ok);
  });

  it('lets everything through only when auth is explicitly off', () => {
    const open = new ClientAuth([], [], false);
    expect(open.basic(undefined)).toBe('');
    expect(open.bearer(undefined)).toBe(true);
  });
});
