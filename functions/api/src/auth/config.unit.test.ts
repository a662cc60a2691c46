import { describe, expect, it } from 'vitest';
import { AuthConfigError } from './authenticator.js';
import { buildAuthenticator, loadAuthConfig } from './config.js';
import { GCLOUD_CLI_AUDIENCE } from './id-token-verifier.js';

const TOKEN = 'local-admin-token-0123456789';

describe('loadAuthConfig', () => {
  it('enforces tokens and Google identities when configured', () => {
    const config = loadAuthConfig({
      ADMIN_TOKENS: `local:${TOKEN}`,
      ADMIN_EMAILS: 'ops@example.com, ci@p.iam.gserviceaccount.com',
      ADMIN_AUDIENCES: `https://api-xyz.a.run.app,${GCLOUD_CLI_AUDIENCE}`,
    });
    expect(config).toEqual({
      mode: 'enforced',
      tokens: [{ name: 'local', token: TOKEN }],
      google: {
        emails: ['ops@example.com', 'ci@p.iam.gserviceaccount.com'],
        audiences: ['https://api-xyz.a.run.app', GCLOUD_CLI_AUDIENCE],
      },
    });
    expect(buildAuthenticator(config).description).toBe('tokens(1)+google(2 emails)');
  });

  it('runs open only when local mode is explicit', () => {
    expect(loadAuthConfig({ PROXYPLANE_LOCAL: '1' })).toEqual({ mode: 'open' });
    expect(buildAuthenticator({ mode: 'open' }).description).toBe('off (local mode)');
  });

  it('prefers credentials over local mode when both are set', () => {
    expect(loadAuthConfig({ PROXYPLANE_LOCAL: '1', ADMIN_TOKENS: `l:${TOKEN}` })).toMatchObject({
      mode: 'enforced',
    });
  });

  it.each([
    [{}, 'no admin credential'],
    [{ PROXYPLANE_LOCAL: 'true' }, 'no admin credential'],
    [{ ADMIN_EMAILS: 'ops@example.com' }, 'ADMIN_AUDIENCES'],
    [{ ADMIN_EMAILS: 'not-an-email', ADMIN_AUDIENCES: 'x' }, 'not an email'],
    [{ ADMIN_TOKENS: 'x:short' }, 'at least 16'],
  ])('refuses %j (%s)', (env, message) => {
    expect(() => loadAuthConfig(env)).toThrow(AuthConfigError);
    expect(() => loadAuthConfig(env)).toThrow(message);
  });
});
