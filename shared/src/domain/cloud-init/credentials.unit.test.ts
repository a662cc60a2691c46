import { describe, expect, it } from 'vitest';
import { credentialsRuleOf, parseProxyCredentials } from './credentials.js';

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

  describe('an external proxy (its provider chose the username)', () => {
    it.each([
      [
        'customer-c1-zone-residential_proxy1-country-us-city-newyork-session-12345678:pw',
        'customer-c1-zone-residential_proxy1-country-us-city-newyork-session-12345678',
      ],
      ['user+tag@example.com:pw', 'user+tag@example.com'],
      [`${'u'.repeat(255)}:pw`, 'u'.repeat(255)],
    ])('%j → %s, which a managed proxy refuses', (payload, username) => {
      expect(parseProxyCredentials(payload, 'external')).toEqual({
        ok: true,
        credentials: { username, password: 'pw' },
      });
      expect(parseProxyCredentials(payload, 'managed').ok).toBe(false);
    });

    it.each([
      [`${'u'.repeat(256)}:pw`, 'username'],
      ['us er:pw', 'username'],
      ['üser:pw', 'username'],
      ['{"username":"u","password":"pw"}', 'username'],
      ['[u]:pw', 'username'],
      ['user:pass word', 'password'],
      ['user:pass\r', 'carriage return'],
    ])('refuses %j, naming the %s rule', (payload, rule) => {
      const r = parseProxyCredentials(payload, 'external');
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toContain(rule);
    });
  });

  it.each([
    [{ mode: 'managed' as const }, 'managed'],
    [{ mode: 'managed' as const, cloudInit: null }, 'managed'],
    // A script of the operator's own reads the secret: the provider-style rule, as for an external proxy.
    [{ mode: 'managed' as const, cloudInit: { inline: '#!/bin/sh' } }, 'external'],
    [{ mode: 'external' as const }, 'external'],
  ])('credentialsRuleOf(%j) → %s', (spec, rule) => expect(credentialsRuleOf(spec)).toBe(rule));
});
