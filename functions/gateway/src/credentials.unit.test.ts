import { describe, expect, it } from 'vitest';
import type { SecretRef } from '../../../shared/src/domain/proxy.js';
import { CredentialCache, type CredentialResolver, refKey } from './credentials.js';

/** A resolver that counts its calls per reference. */
function counting() {
  const calls = new Map<string, number>();
  const resolver: CredentialResolver = {
    resolve: async (ref: SecretRef) => {
      calls.set(refKey(ref), (calls.get(refKey(ref)) ?? 0) + 1);
      return { username: 'u', password: `v${ref.version}` };
    },
  };
  return { resolver, calls };
}

describe('CredentialCache', () => {
  it('keeps a pinned version while snapshots name it, without asking again', async () => {
    const { resolver, calls } = counting();
    const cache = new CredentialCache(resolver, 60_000, () => 0);
    await cache.resolveAll([{ secret: 's', version: '7' }]);
    await cache.resolveAll([{ secret: 's', version: '7' }]);
    expect(calls.get('s@7')).toBe(1);
  });

  it('forgets a version no snapshot names any more: rotations do not pile up revoked passwords', async () => {
    // Snapshots carry the version each proxy's VM serves (status.servedCredentials), so every rotation
    // brings a new pinned reference and the previous one stops being named. Kept, each would stay in
    // memory for the worker's life — one per secret per rotation, old and revoked passwords included.
    const { resolver, calls } = counting();
    const cache = new CredentialCache(resolver, 60_000, () => 0);
    await cache.resolveAll([{ secret: 's', version: '7' }]);
    await cache.resolveAll([{ secret: 's', version: '8' }]);
    // Named again (a proxy still on 7 back in the snapshot): read again, not served from a kept copy.
    const again = await cache.resolveAll([{ secret: 's', version: '7' }]);
    expect(again.get('s@7')).toEqual({ username: 'u', password: 'v7' });
    expect(calls.get('s@7')).toBe(2);
  });
});
