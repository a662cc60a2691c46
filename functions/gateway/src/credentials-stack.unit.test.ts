// The gateway's credential stack as secretManagerCredentials wires it (secretCredentials: the real
// CachedSecretReader and resolver) under the worker's CredentialCache, over a fake Secret Manager and one
// clock. credentials.unit.test.ts drives CredentialCache over a counting resolver, which cannot see what a
// layer below it keeps: a second cache there answered a reference named again with its own old copy, and
// CredentialCache stamped it as read now.
import { describe, expect, it } from 'vitest';
import type { SecretRef } from '../../../shared/src/domain/proxy.js';
import { SecretAccessError } from '../../../shared/src/ports/secrets.js';
import { secretCredentials } from './control/secret-credentials.js';
import { CredentialCache, CredentialError } from './credentials.js';

const TTL = 300_000; // GATEWAY_CREDENTIALS_TTL_SECONDS' default

function stack() {
  let t = 0;
  const values = new Map<string, string | SecretAccessError>();
  const reads: string[] = [];
  const sm = {
    access: async (ref: SecretRef) => {
      const key = `${ref.secret}@${ref.version}`;
      reads.push(key);
      const v = values.get(key);
      if (v === undefined) throw new SecretAccessError('not_found', key, 'no such version');
      if (v instanceof SecretAccessError) throw v;
      return v;
    },
  };
  const clock = { now: () => new Date(t) };
  const cache = new CredentialCache(secretCredentials(sm, clock), TTL, () => t);
  return {
    cache,
    values,
    reads,
    at: (ms: number) => {
      t = ms;
    },
  };
}

const L = { secret: 'l', version: 'latest' };
const P = { secret: 'p', version: 'latest' };
const V7 = { secret: 's', version: '7' };

describe('the gateway credential stack (CachedSecretReader under CredentialCache)', () => {
  it('a "latest" named again is read again: a rotation shows within the TTL, not twice it', async () => {
    const s = stack();
    s.values.set('l@latest', 'u:pw-old');
    s.values.set('p@latest', 'u:pw-p');
    await s.cache.resolveAll([L, P]);
    s.values.set('l@latest', 'u:pw-new'); // rotated at 1 s
    s.at(100_000);
    await s.cache.resolveAll([P]); // the proxy on L is out of this snapshot (cordoned, moved)
    s.at(290_000);
    await s.cache.resolveAll([L, P]); // and back
    s.at(310_000); // past the TTL from the rotation: docs/gateway.md promises the new value by now
    const out = await s.cache.resolveAll([L, P]);
    expect(out.get('l@latest')).toEqual({ username: 'u', password: 'pw-new' });
  });

  it('a pinned version disabled while no snapshot named it is refused when named again', async () => {
    const s = stack();
    s.values.set('s@7', 'u:pw-v7');
    s.values.set('s@8', 'u:pw-v8');
    s.at(1_000_000);
    await s.cache.resolveAll([V7]);
    s.values.set('s@7', new SecretAccessError('failed_precondition', 's@7', 'version is DISABLED'));
    s.at(1_010_000);
    await s.cache.resolveAll([{ secret: 's', version: '8' }]); // the snapshot names another version
    s.at(1_020_000);
    const back = await s.cache.resolveAll([V7]);
    expect(back.get('s@7')).toBeInstanceOf(CredentialError);
  });

  it('reads Secret Manager only through CredentialCache: a fresh value is not read twice', async () => {
    const s = stack();
    s.values.set('l@latest', 'u:pw');
    await s.cache.resolveAll([L, L]);
    s.at(TTL - 1);
    await s.cache.resolveAll([L]);
    expect(s.reads).toEqual(['l@latest']);
    s.at(TTL);
    await s.cache.resolveAll([L]);
    expect(s.reads).toEqual(['l@latest', 'l@latest']);
  });

  it('a failed refresh keeps the last good value; a reference named again with Secret Manager failing is left out', async () => {
    const s = stack();
    s.values.set('l@latest', 'u:pw');
    await s.cache.resolveAll([L]);
    s.values.set('l@latest', new SecretAccessError('transient', 'l@latest', 'unavailable'));
    s.at(TTL + 1);
    expect((await s.cache.resolveAll([L])).get('l@latest')).toEqual({ username: 'u', password: 'pw' });
    await s.cache.resolveAll([P]); // forgotten
    expect((await s.cache.resolveAll([L])).get('l@latest')).toBeInstanceOf(CredentialError);
  });
});
