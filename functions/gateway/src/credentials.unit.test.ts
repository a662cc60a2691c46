import { describe, expect, it, vi } from 'vitest';
import type { SecretRef } from '../../../shared/src/domain/proxy.js';
import { CredentialCache, CredentialError, type CredentialResolver, refKey } from './credentials.js';

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

  it('a clock stepped back makes no `latest` copy fresh: it is read again', async () => {
    const { resolver, calls } = counting();
    let t = 1_000_000;
    const cache = new CredentialCache(resolver, 60_000, () => t);
    await cache.resolveAll([{ secret: 's', version: 'latest' }]);
    t -= 3_600_000; // an hour back, then past the TTL from there: the copy's age is still negative
    t += 60_001;
    await cache.resolveAll([{ secret: 's', version: 'latest' }]);
    expect(calls.get('s@latest')).toBe(2);
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

  it('a Secret Manager call that hangs holds no snapshot: the last good value is kept, a value never read leaves its proxy out', async () => {
    // The client retries UNAVAILABLE / RESOURCE_EXHAUSTED for up to 10 minutes before it fails, and a
    // snapshot is swapped in only once every reference is resolved: one slow secret held every snapshot
    // after it, and the worker went stale (503) with snapshots arriving and its credentials cached.
    vi.useFakeTimers();
    try {
      let hang = false;
      const resolver: CredentialResolver = {
        resolve: (ref) =>
          hang ? new Promise(() => {}) : Promise.resolve({ username: 'u', password: `v-${ref.secret}` }),
      };
      let now = 0;
      const cache = new CredentialCache(resolver, 60_000, () => now, 10_000);
      await cache.resolveAll([{ secret: 'a', version: 'latest' }]);
      hang = true;
      now = 120_000; // "latest" is due for a refresh
      let out: Awaited<ReturnType<CredentialCache['resolveAll']>> | undefined;
      void cache
        .resolveAll([
          { secret: 'a', version: 'latest' },
          { secret: 'b', version: '1' },
        ])
        .then((o) => {
          out = o;
        });
      await vi.advanceTimersByTimeAsync(9_999);
      expect(out).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(out?.get('a@latest')).toEqual({ username: 'u', password: 'v-a' });
      expect(out?.get('b@1')).toBeInstanceOf(CredentialError);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
  it('an answer that lands past the bound is kept for the next snapshot that names it, and only then', async () => {
    // The read goes on past CREDENTIAL_RESOLVE_TIMEOUT_MS (docs/gateway.md § Apply: "its answer is
    // cached"). It was kept by the CachedSecretReader below; that one keeps nothing past a read now, so
    // without this a secret that always answers in 12 s was never used, each snapshot reading it again.
    vi.useFakeTimers();
    try {
      const pending = new Map<string, (v: { username: string; password: string }) => void>();
      const calls = new Map<string, number>();
      const resolver: CredentialResolver = {
        resolve: (ref) => {
          calls.set(refKey(ref), (calls.get(refKey(ref)) ?? 0) + 1);
          return new Promise((resolve) => pending.set(refKey(ref), resolve));
        },
      };
      const cache = new CredentialCache(resolver, 60_000, () => 0, 10_000);
      const first = cache.resolveAll([
        { secret: 'a', version: 'latest' },
        { secret: 'b', version: '1' },
      ]);
      await vi.advanceTimersByTimeAsync(10_000);
      expect((await first).get('a@latest')).toBeInstanceOf(CredentialError);
      pending.get('a@latest')?.({ username: 'u', password: 'late-a' });
      await vi.advanceTimersByTimeAsync(0);
      const second = cache.resolveAll([{ secret: 'a', version: 'latest' }]);
      await vi.advanceTimersByTimeAsync(10_000);
      expect((await second).get('a@latest')).toEqual({ username: 'u', password: 'late-a' });
      expect(calls.get('a@latest')).toBe(1);
      // b@1 is no longer named when its answer lands: not kept, read again when named again.
      pending.get('b@1')?.({ username: 'u', password: 'late-b' });
      await vi.advanceTimersByTimeAsync(0);
      const third = cache.resolveAll([{ secret: 'b', version: '1' }]);
      pending.get('b@1')?.({ username: 'u', password: 'b-now' });
      expect((await third).get('b@1')).toEqual({ username: 'u', password: 'b-now' });
      expect(calls.get('b@1')).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  /** A resolver that shares no reads: every call is its own, answered when the test says (by call number). */
  function unshared() {
    const answers: Array<(v: { username: string; password: string }) => void> = [];
    const resolver: CredentialResolver = {
      resolve: () => new Promise((resolve) => answers.push(resolve)),
    };
    const answer = (call: number, password: string) => answers[call - 1]?.({ username: 'u', password });
    return { resolver, answers, answer };
  }
  const A = { secret: 'a', version: 'latest' };

  it('a late answer never replaces one from a read begun after it', async () => {
    // Reads #1 and #2 of `a` pass the bound; #3 answers in time. #1 and #2 landing after it are older
    // values (a rotation may lie between): kept, they would serve the old password for a TTL.
    vi.useFakeTimers();
    try {
      const { resolver, answers, answer } = unshared();
      const cache = new CredentialCache(resolver, 60_000, () => 0, 10_000);
      for (let i = 0; i < 2; i++) {
        const late = cache.resolveAll([A]);
        await vi.advanceTimersByTimeAsync(10_000);
        expect((await late).get('a@latest')).toBeInstanceOf(CredentialError);
      }
      const third = cache.resolveAll([A]);
      answer(3, 'new');
      expect((await third).get('a@latest')).toEqual({ username: 'u', password: 'new' });
      answer(1, 'old-1');
      answer(2, 'old-2');
      await vi.advanceTimersByTimeAsync(0);
      expect((await cache.resolveAll([A])).get('a@latest')).toEqual({ username: 'u', password: 'new' });
      expect(answers).toHaveLength(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a read running across clear() keeps nothing when it lands', async () => {
    // clear() (a reloaded snapshot file) promises the next snapshot resolves afresh: a read begun before
    // it, landing after, must not fill the cache with what the old source said.
    vi.useFakeTimers();
    try {
      const { resolver, answers, answer } = unshared();
      const cache = new CredentialCache(resolver, 60_000, () => 0, 10_000);
      const first = cache.resolveAll([A]);
      await vi.advanceTimersByTimeAsync(10_000);
      expect((await first).get('a@latest')).toBeInstanceOf(CredentialError);
      cache.clear();
      answer(1, 'before-clear');
      await vi.advanceTimersByTimeAsync(0);
      const after = cache.resolveAll([A]);
      expect(answers).toHaveLength(2);
      answer(2, 'after-clear');
      expect((await after).get('a@latest')).toEqual({ username: 'u', password: 'after-clear' });
    } finally {
      vi.useRealTimers();
    }
  });
});
