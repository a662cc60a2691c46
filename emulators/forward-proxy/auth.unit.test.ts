import { describe, expect, it } from 'vitest';
import { credentialsMatch, decodeBasic, makeAuthorizer } from './auth.js';

const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

describe('decodeBasic', () => {
  it.each([
    [basic('u:p'), 'u:p'],
    [basic('u:p:with:colons'), 'u:p:with:colons'],
    [`basic ${Buffer.from('u:p').toString('base64')}`, 'u:p'],
    [undefined, null],
    ['Bearer abc', null],
    ['Basic', null],
    ['Basic !!!', null],
    [basic('no-colon'), null],
  ])('%s → %s', (header, expected) => {
    expect(decodeBasic(header)).toBe(expected);
  });
});

describe('credentialsMatch / makeAuthorizer', () => {
  it('compares whole credentials, whatever their lengths', () => {
    expect(credentialsMatch('u:p', 'u:p')).toBe(true);
    expect(credentialsMatch('u:p', 'u:px')).toBe(false);
    expect(credentialsMatch('u:pp', 'u:p')).toBe(false);
    expect(credentialsMatch(null, 'u:p')).toBe(false);
  });

  it('a fixed value is checked synchronously; no value means an open proxy', () => {
    const check = makeAuthorizer('u:p');
    expect(check(basic('u:p'))).toBe(true);
    expect(check(basic('u:q'))).toBe(false);
    expect(check(undefined)).toBe(false);
    expect(makeAuthorizer(null)(undefined)).toBe(true);
  });

  it('a getter that yields null or throws denies (fail closed)', async () => {
    await expect(makeAuthorizer(async () => 'u:p')(basic('u:p'))).resolves.toBe(true);
    await expect(makeAuthorizer(async () => null)(basic('u:p'))).resolves.toBe(false);
    await expect(
      makeAuthorizer(async () => {
        throw new Error('secret manager down');
      })(basic('u:p')),
    ).resolves.toBe(false);
  });
});
