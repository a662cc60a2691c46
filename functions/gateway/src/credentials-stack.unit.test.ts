// The gateway's credential stack as secretManagerCredentials wires it (secretCredentials: the real
// CachedSecretReader and resolver) under the worker's CredentialCache, over a fake Secret Manager and one
// clock. credentials.unit.test.ts drives CredentialCache over a counting resolver, which cannot see what a
// layer below it keeps: a second cache there answered a reference named again with its own old copy, and
// CredentialCache stamped it as read now.
import { describe, expect, it, vi } from 'vitest';
import type { SecretRef } from '../../../shared/src/domain/proxy.js';
import { SecretAccessError } from '../../../shared/src/ports/secrets.js';
import { secretCredentials } from './control/secret-credentials.js';
import { CredentialCache, CredentialError } from './credentials.js';

const TTL = 300_000; // GATEWAY_CREDENTIALS_TTL_SECONDS' default

function stack() {
  let t = 0;
  const values = new Map<string, string | SecretAccessError>();
  const reads: string[] = [];
  /** While set, a read waits for it before answering (a Secret Manager call that hangs). */
  const hold: { gate: Promise<void> | undefined } = { gate: undefined };
  const sm = {
    access: async (ref: SecretRef) => {
      const key = `${ref.secret}@${ref.version}`;
      reads.push(key);
      if (hold.gate) await hold.gate;
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
    hold,
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

  it("takes a provider's username past what a managed VM takes (a reference names no mode)", async () => {
    const s = stack();
    const user = 'customer-c1-zone-residential_proxy1-country-us-city-newyork-session-12345678';
    s.values.set('l@latest', `${user}:pw`);
    s.values.set('p@latest', 'us er:pw');
    const out = await s.cache.resolveAll([L, P]);
    expect(out.get('l@latest')).toEqual({ username: user, password: 'pw' });
    expect(out.get('p@latest')).toBeInstanceOf(CredentialError);
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

  it('snapshots naming a reference while its first read hangs make one Secret Manager call', async () => {
    // CredentialCache de-duplicates a reference within one snapshot ([L, L] above), not across snapshots:
    // the next one, begun once the first gave up on L at CREDENTIAL_RESOLVE_TIMEOUT_MS, reads L again.
    // The CachedSecretReader below joins it to the read still running — the one thing it is there for.
    vi.useFakeTimers();
    try {
      const s = stack();
      s.values.set('l@latest', 'u:pw');
      let open!: () => void;
      s.hold.gate = new Promise((r) => {
        open = r;
      });
      const first = s.cache.resolveAll([L]);
      await vi.advanceTimersByTimeAsync(10_000);
      expect((await first).get('l@latest')).toBeInstanceOf(CredentialError);
      const second = s.cache.resolveAll([L]);
      await vi.advanceTimersByTimeAsync(1_000);
      open();
      expect((await second).get('l@latest')).toEqual({ username: 'u', password: 'pw' });
      expect(s.reads).toEqual(['l@latest']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a clock stepped back does not make the inner reader answer from the last read (review sequence)', async () => {
    // With ttlMs 0 every read used to be stored, and `now - fetchedAt < 0` held once the wall clock stepped
    // back: a reference CredentialCache had forgotten was answered from that copy with no call.
    const s = stack();
    const K = { secret: 'k', version: 'latest' };
    const O = { secret: 'o', version: 'latest' };
    s.values.set('k@latest', 'u:old');
    s.values.set('o@latest', 'u:o');
    s.at(1_000_000);
    await s.cache.resolveAll([O]);
    s.at(1_000_500);
    expect((await s.cache.resolveAll([K, O])).get('k@latest')).toEqual({ username: 'u', password: 'old' });
    await s.cache.resolveAll([O]); // CredentialCache forgets K
    s.at(900_000); // NTP steps the wall clock back
    s.values.set('k@latest', 'u:new');
    expect((await s.cache.resolveAll([K])).get('k@latest')).toEqual({ username: 'u', password: 'new' });
    expect(s.reads.filter((r) => r === 'k@latest')).toHaveLength(2);
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
