import { describe, expect, it } from 'vitest';
import { parseProxyCredentials } from './credentials.js';

describe('parseProxyCredentials', () => {
  it.each([
    ['alice:Pa55', 'alice', 'Pa55'],
    ['alice:Pa55\n', 'alice', 'Pa55'],
    ['alice:Pa55\n\n', 'alice', 'Pa55'],
    ['a.l-i_c~e:p:a:s:s', 'a.l-i_c~e', 'p:a:s:s'],
    ['u:!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', 'u', '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'],
  ])('%j → %s / %s', (payload, username, password) => {
    expect(parseProxyCredentials(payload)).toEqual({ ok: true, credentials: { username, password } });
  });

  it.each([
    ['no-colon', 'username:password'],
    [':only-password', 'username'],
    ['user:', 'password'],
    ['us er:pw', 'username'],
    ['user:pass word', 'password'],
    ['user:pass\r\n', 'password'],
    ['user:pass\r\n', 'carriage return'],
    ['user:pass\r', 'carriage return'],
    ['user:pa\nss', 'password'],
    ['user:pässword', 'password'],
    [`${'u'.repeat(65)}:pw`, 'username'],
    [`u:${'p'.repeat(257)}`, 'password'],
  ])('refuses %j, naming the %s rule without quoting the value', (payload, rule) => {
    const r = parseProxyCredentials(payload);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toContain(rule);
      const secretPart = payload.split(':')[1];
      if (secretPart) expect(r.reason).not.toContain(secretPart);
    }
  });
});
