import { describe, expect, it } from 'vitest';
import {
  MANAGED_USERNAME_CHECK,
  renderDefaultCloudInit,
} from '../../shared/src/domain/cloud-init/startup-script.js';
import { SecretAccessError } from '../../shared/src/ports/secrets.js';
import { bootCredentials, CREDENTIAL_READ_ATTEMPTS } from './instance-proxy.js';
import { type InstanceSpec, METADATA_CREDENTIALS_SECRET, METADATA_STARTUP_SCRIPT } from './instance-spec.js';
import { MalformedCredentials } from './secret-credentials.js';

const SECRET = 'projects/demo/secrets/pool-auth/versions/latest';
const spec = { metadata: [{ key: METADATA_CREDENTIALS_SECRET, value: SECRET }] } as unknown as InstanceSpec;

/** A resolver failing with `errors` in turn, then answering "u:p"; counts its calls. */
function resolver(errors: unknown[]) {
  const calls = { n: 0 };
  const resolveCredentials = async () => {
    const err = errors[calls.n++];
    if (err !== undefined) throw err;
    return 'u:p';
  };
  return { calls, deps: { resolveCredentials, credentialRetryDelayMs: 1 } };
}

describe('bootCredentials: the secret read as the startup script reads it (20 tries)', () => {
  it('tries a passing failure again: a busy Secret Manager does not leave the VM without a proxy', async () => {
    const busy = new SecretAccessError('transient', SECRET, 'could not be read right now');
    const r = resolver([busy, new Error('ECONNRESET')]);
    expect(await bootCredentials(spec, r.deps)).toEqual({ value: 'u:p' });
    expect(r.calls.n).toBe(3);
  });

  it('gives up after the script’s twenty tries, and at once on a malformed secret', async () => {
    const busy = new SecretAccessError('transient', SECRET, 'could not be read right now');
    const always = resolver(Array.from({ length: 30 }, () => busy));
    expect(await bootCredentials(spec, always.deps)).toEqual({ error: expect.stringContaining('failed') });
    expect(always.calls.n).toBe(CREDENTIAL_READ_ATTEMPTS);
    const malformed = resolver([new MalformedCredentials(SECRET, 'no colon')]);
    expect(await bootCredentials(spec, malformed.deps)).toEqual({ error: expect.stringContaining('failed') });
    expect(malformed.calls.n).toBe(1);
  });

  // As the startup script does: a grant made moments before the proxy takes minutes to reach Secret
  // Manager, and a VM that gave up at once never served.
  it.each([
    ['refused', new SecretAccessError('permission_denied', SECRET, 'denied')],
    ['disabled', new SecretAccessError('failed_precondition', SECRET, 'disabled')],
    ['missing', new SecretAccessError('not_found', SECRET, 'not found')],
  ])('reads a %s secret again, and boots once it can be read', async (_, err) => {
    const r = resolver([err, err]);
    expect(await bootCredentials(spec, r.deps)).toEqual({ value: 'u:p' });
    expect(r.calls.n).toBe(3);
  });

  it('reads a secret the resolver found missing (null) again too', async () => {
    let n = 0;
    const deps = { resolveCredentials: async () => (n++ === 0 ? null : 'u:p'), credentialRetryDelayMs: 1 };
    expect(await bootCredentials(spec, deps)).toEqual({ value: 'u:p' });
    expect(n).toBe(2);
  });

  it('stops trying once the boot is overtaken (the VM deleted or stopped meanwhile)', async () => {
    const r = resolver([new Error('ETIMEDOUT'), new Error('ETIMEDOUT')]);
    expect(await bootCredentials(spec, r.deps, () => false)).toEqual({
      error: expect.stringContaining('ETIMEDOUT'),
    });
    expect(r.calls.n).toBe(1);
  });
});

describe('bootCredentials: the rule the VM reads its secret by', () => {
  const rules: Array<string | undefined> = [];
  const deps = {
    resolveCredentials: async (_name: string, rule?: string) => {
      rules.push(rule);
      return 'u:p';
    },
    credentialRetryDelayMs: 0,
  };
  const withScript = (script: string) =>
    ({
      metadata: [
        { key: METADATA_CREDENTIALS_SECRET, value: SECRET },
        { key: METADATA_STARTUP_SCRIPT, value: script },
      ],
    }) as unknown as InstanceSpec;

  it("the default startup script's (managed); a cloud-init of the proxy's own decides: the external rule", async () => {
    rules.length = 0;
    await bootCredentials(
      withScript(renderDefaultCloudInit({ port: 3128, credentialsSecret: SECRET })),
      deps,
    );
    await bootCredentials(withScript('#!/bin/sh\necho mine'), deps);
    // A copy of the default script whose check was widened for a provider's usernames: its own rule.
    const widened = renderDefaultCloudInit({ port: 3128, credentialsSecret: SECRET }).replace(
      MANAGED_USERNAME_CHECK,
      "local user_re='^[!-9;-~]{1,255}$'",
    );
    await bootCredentials(withScript(widened), deps);
    expect(rules).toEqual(['managed', 'external', 'external']);
  });
});
