import { describe, expect, it } from 'vitest';
import { AuthConfigError } from './authenticator.js';
import { buildAuthenticator, loadAuthConfig } from './config.js';
import { GCLOUD_CLI_AUDIENCE } from './id-token-verifier.js';

const TOKEN = 'local-admin-token-0123456789';
const SERVICE = 'https://proxyplane-api-123.us-central1.run.app';

describe('loadAuthConfig', () => {
  it('reads Terraform-style ADMIN_PRINCIPALS, bare ADMIN_EMAILS, audiences and tokens', () => {
    const config = loadAuthConfig({
      ADMIN_TOKENS: `local:${TOKEN}`,
      ADMIN_PRINCIPALS:
        'user:Ops@Example.com,serviceAccount:ci@p.iam.gserviceaccount.com,domain:corp.example',
      ADMIN_EMAILS: 'oncall@example.com, ops@example.com',
      ADMIN_AUDIENCES: `${SERVICE},${GCLOUD_CLI_AUDIENCE}`,
    });
    expect(config).toEqual({
      mode: 'enforced',
      tokens: [{ name: 'local', token: TOKEN }],
      google: {
        emails: ['ops@example.com', 'ci@p.iam.gserviceaccount.com', 'oncall@example.com'],
        domains: ['corp.example'],
        audiences: [SERVICE, GCLOUD_CLI_AUDIENCE],
      },
      warnings: [],
    });
    expect(buildAuthenticator(config).description).toBe('tokens(1)+google(3 emails, 1 domains)');
  });

  it('accepts only gcloud user tokens when no audience is configured, and says so', () => {
    const config = loadAuthConfig({ ADMIN_PRINCIPALS: 'user:ops@example.com' });
    expect(config).toMatchObject({ mode: 'enforced', google: { audiences: [GCLOUD_CLI_AUDIENCE] } });
    expect(config.warnings).toEqual([expect.stringContaining('ADMIN_AUDIENCES is unset')]);
  });

  it('reports group principals as ignored (an ID token does not carry group membership)', () => {
    const config = loadAuthConfig({
      ADMIN_PRINCIPALS: 'group:admins@example.com',
      ADMIN_TOKENS: `l:${TOKEN}`,
    });
    expect(config).toMatchObject({ mode: 'enforced', google: null });
    expect(config.warnings).toEqual([expect.stringContaining('group:admins@example.com')]);
  });

  it('runs open only when local mode is explicit', () => {
    expect(loadAuthConfig({ PROXYPLANE_LOCAL: '1' })).toEqual({ mode: 'open', warnings: [] });
    expect(loadAuthConfig({ FIRESTORE_EMULATOR_HOST: '127.0.0.1:8080' })).toEqual({
      mode: 'open',
      warnings: [],
    });
    expect(buildAuthenticator({ mode: 'open', warnings: [] }).description).toBe('off (local mode)');
  });

  it.each([[''], ['\n'], [' , ']])(
    'refuses ADMIN_TOKENS set to %j (a blank secret version), Google admins or not',
    (blank) => {
      for (const env of [{ ADMIN_TOKENS: blank }, { ADMIN_TOKENS: blank, ADMIN_EMAILS: 'ops@example.com' }])
        expect(() => loadAuthConfig(env)).toThrow(/ADMIN_TOKENS is set but names no admin token/);
    },
  );

  it('prefers credentials over local mode when both are set', () => {
    expect(loadAuthConfig({ PROXYPLANE_LOCAL: '1', ADMIN_TOKENS: `l:${TOKEN}` })).toMatchObject({
      mode: 'enforced',
    });
  });

  it.each([
    [{}, 'no admin credential'],
    [{ PROXYPLANE_LOCAL: 'true' }, 'no admin credential'],
    [{ ADMIN_PRINCIPALS: 'group:admins@example.com' }, 'no admin credential'],
    [{ ADMIN_EMAILS: 'not-an-email' }, 'not an email'],
    [{ ADMIN_PRINCIPALS: 'role:owner' }, 'expected user:'],
    [{ ADMIN_PRINCIPALS: 'domain:not a domain' }, 'not a domain'],
    [{ ADMIN_TOKENS: 'x:short' }, 'at least 16'],
  ])('refuses %j (%s)', (env, message) => {
    expect(() => loadAuthConfig(env)).toThrow(AuthConfigError);
    expect(() => loadAuthConfig(env)).toThrow(message);
  });
});
