import { describe, expect, it } from 'vitest';
import { ConfigError, loadGatewayConfig } from './config.js';

describe('loadGatewayConfig', () => {
  it('reads the snapshot from --snapshot before the env, and users in both notations', () => {
    const a = loadGatewayConfig(['--snapshot', 'a.json'], {
      GATEWAY_SNAPSHOT_FILE: 'b.json',
      GATEWAY_CLIENT_USERS: 'u1:p:1,u2:p2',
    });
    expect(a.snapshotFile).toBe('a.json');
    expect(a.GATEWAY_CLIENT_USERS).toEqual([
      { username: 'u1', password: 'p:1' },
      { username: 'u2', password: 'p2' },
    ]);
    const b = loadGatewayConfig([], {
      GATEWAY_CLIENT_USERS: '[{"username":"x","password":"y,z"}]',
      GATEWAY_PROXY_PORT: 'off',
    });
    expect(b.GATEWAY_CLIENT_USERS).toEqual([{ username: 'x', password: 'y,z' }]);
    expect(b.GATEWAY_PROXY_PORT).toBe('off');
    expect(b.PORT).toBe(8080);
  });

  it.each([
    ['no client credentials at all', {}],
    ['a user without a password separator', { GATEWAY_CLIENT_USERS: 'nocolon' }],
    ['a bad port', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_PROXY_PORT: '70000' }],
    ['an unknown auth mode', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_CLIENT_AUTH: 'maybe' }],
  ])('refuses %s', (_label, env) => {
    expect(() => loadGatewayConfig([], env)).toThrow(ConfigError);
  });

  it('allows no credentials only when auth is explicitly off', () => {
    expect(loadGatewayConfig([], { GATEWAY_CLIENT_AUTH: 'none' }).GATEWAY_CLIENT_AUTH).toBe('none');
  });
});
