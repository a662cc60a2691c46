import { describe, expect, it } from 'vitest';
import { connectPortAllowed, connectPortRule, parseConnectPortsFlag } from './connect-ports.js';

describe('connectPortAllowed', () => {
  it('allows only the listed ports when there is a list', () => {
    const rule = connectPortRule([443, 18321]);
    expect(connectPortAllowed(rule, 443)).toBe(true);
    expect(connectPortAllowed(rule, 18321)).toBe(true);
    expect(connectPortAllowed(rule, 8443)).toBe(false);
    expect(connectPortAllowed(rule, 80)).toBe(false);
  });

  it('allows every port without a list', () => {
    const rule = connectPortRule(undefined);
    for (const port of [1, 22, 80, 443, 65535]) expect(connectPortAllowed(rule, port)).toBe(true);
  });
});

describe('parseConnectPortsFlag', () => {
  it('reads "any" or a comma-separated list', () => {
    expect(parseConnectPortsFlag('any')).toBeUndefined();
    expect(parseConnectPortsFlag('443')).toEqual([443]);
    expect(parseConnectPortsFlag('443, 8443')).toEqual([443, 8443]);
  });

  it.each(['', '0', '65536', '443,', 'https', '44 3', '-1'])('refuses %j', (text) => {
    expect(() => parseConnectPortsFlag(text)).toThrow(/--connect-ports/);
  });
});
