import { describe, expect, it, vi } from 'vitest';
import type { SecretRef } from '../../domain/proxy.js';
import { ManualClock } from '../../ports/clock.js';
import { SecretAccessError, type SecretReader } from '../../ports/secrets.js';
import { CachedSecretReader } from './cached-reader.js';

class CountingReader implements SecretReader {
  calls = 0;
  value = 'v1';
  failWith: SecretAccessError | undefined;
  gate: Promise<void> = Promise.resolve();
  async access(_ref: SecretRef): Promise<string> {
    this.calls += 1;
    await this.gate;
    if (this.failWith) throw this.failWith;
    return this.value;
  }
}

const ref: SecretRef = { secret: 's', version: 'latest' };
const transient = new SecretAccessError('transient', 'r', 'unavailable');
const denied = new SecretAccessError('permission_denied', 'r', 'denied');

function setup(
  opts: {
    ttlMs?: number;
    staleIfErrorMs?: number;
    maxEntries?: number;
    readDeadlineMs?: number;
    missDeadlineMs?: number;
    failureTtlMs?: number;
  } = {},
) {
  const inner = new CountingReader();
  const clock = new ManualClock();
  return { inner, clock, cache: new CachedSecretReader(inner, { ttlMs: 60_000, clock, ...opts }) };
}

describe('CachedSecretReader', () => {
  it('keeps no version past its TTL and stale-if-error time: rotations do not pile old passwords up', async () => {
    const { cache, clock } = setup({ staleIfErrorMs: 30_000, maxEntries: 50_000 });
    for (let v = 1; v <= 100; v++) {
      await cache.access({ secret: 's', version: String(v) });
      clock.advance(20_000);
    }
    // Every 20 s a new version: what was read within the last 90 s (TTL + stale-if-error) may still answer.
    expect(cache.size).toBeLessThanOrEqual(6);
    // One still within its stale-if-error time answers a transient failure, as before.
    const { cache: c2, clock: k2, inner } = setup({ staleIfErrorMs: 30_000 });
    await c2.access(ref);
    k2.advance(70_000);
    await c2.access({ secret: 'other', version: '1' }); // a store, and its sweep, past ref's TTL
    inner.failWith = transient;
    await expect(c2.access(ref)).resolves.toBe('v1');
  });

  it('serves from memory within the TTL and refetches after it', async () => {
    const { inner, clock, cache } = setup();
    expect(await cache.access(ref)).toBe('v1');
    inner.value = 'v2';
    clock.advance(59_999);
    expect(await cache.access(ref)).toBe('v1');
    clock.advance(1);
    expect(await cache.access(ref)).toBe('v2');
    expect(inner.calls).toBe(2);
  });

  it('shares one fetch between concurrent misses', async () => {
    const { inner, cache } = setup();
    let open!: () => void;
    inner.gate = new Promise((r) => {
      open = r;
    });
    const all = Promise.all([cache.access(ref), cache.access(ref), cache.access(ref)]);
    open();
    expect(await all).toEqual(['v1', 'v1', 'v1']);
    expect(inner.calls).toBe(1);
  });

  it('with failureTtlMs, a refusal for good answers for that long without asking again', async () => {
    const { inner, clock, cache } = setup({ failureTtlMs: 60_000 });
    inner.failWith = denied;
    await expect(cache.access(ref)).rejects.toBe(denied);
    clock.advance(59_999);
    await expect(cache.access(ref)).rejects.toBe(denied);
    await expect(cache.access(ref)).rejects.toBe(denied);
    expect(inner.calls).toBe(1);
    // Past it, asked again: the grant was fixed meanwhile.
    clock.advance(1);
    inner.failWith = undefined;
    expect(await cache.access(ref)).toBe('v1');
    expect(inner.calls).toBe(2);
    // Another version of the secret is its own question.
    inner.failWith = denied;
    await expect(cache.access({ secret: 's', version: '7' })).rejects.toBe(denied);
    expect(await cache.access(ref)).toBe('v1');
    expect(inner.calls).toBe(3);
  });

  it('with failureTtlMs, a transient failure is still asked again at once; invalidate forgets a refusal', async () => {
    const { inner, cache } = setup({ failureTtlMs: 60_000 });
    inner.failWith = transient;
    await expect(cache.access(ref)).rejects.toBe(transient);
    inner.failWith = undefined;
    expect(await cache.access(ref)).toBe('v1');
    expect(inner.calls).toBe(2);
    const other: SecretRef = { secret: 'other', version: '1' };
    inner.failWith = denied;
    await expect(cache.access(other)).rejects.toBe(denied);
    inner.failWith = undefined;
    cache.invalidate('other');
    expect(await cache.access(other)).toBe('v1');
    expect(inner.calls).toBe(4);
  });

  it('with failureTtlMs, refusals are bounded by maxEntries and expire', async () => {
    const { inner, clock, cache } = setup({ failureTtlMs: 60_000, maxEntries: 2 });
    inner.failWith = denied;
    for (const v of ['1', '2', '3'])
      await expect(cache.access({ secret: 's', version: v })).rejects.toBe(denied);
    expect(inner.calls).toBe(3);
    // '1' was pushed out by '3': asked again; '3' still stands.
    await expect(cache.access({ secret: 's', version: '1' })).rejects.toBe(denied);
    await expect(cache.access({ secret: 's', version: '3' })).rejects.toBe(denied);
    expect(inner.calls).toBe(4);
    clock.advance(60_000);
    await expect(cache.access({ secret: 's', version: '3' })).rejects.toBe(denied);
    expect(inner.calls).toBe(5);
  });

  it('never caches a failure', async () => {
    const { inner, cache } = setup();
    inner.failWith = denied;
    await expect(cache.access(ref)).rejects.toBe(denied);
    inner.failWith = undefined;
    expect(await cache.access(ref)).toBe('v1');
    expect(inner.calls).toBe(2);
  });

  it.each([
    ['transient within the stale window → stale value', transient, 30_000, 'v1'],
    ['transient past the stale window → error', transient, 40_000, 'error'],
    ['permission_denied → error even within the window', denied, 1_000, 'error'],
  ] as const)('%s', async (_, failure, pastTtl, expected) => {
    const { inner, clock, cache } = setup({ staleIfErrorMs: 30_001 });
    await cache.access(ref);
    clock.advance(60_000 + pastTtl);
    inner.failWith = failure;
    const got = await cache.access(ref).catch(() => 'error');
    expect(got).toBe(expected);
  });

  // "Disabling a version cuts it off": seen disabled (or destroyed, gone, denied), the value kept was still
  // there, and a Secret Manager blip right after served it as stale-if-error for up to staleIfErrorMs.
  it.each([
    ['permission_denied', denied],
    ['disabled (failed_precondition)', new SecretAccessError('failed_precondition', 'r', 'disabled')],
    ['not_found', new SecretAccessError('not_found', 'r', 'destroyed')],
  ] as const)('a version seen %s is not served stale by a transient failure after', async (_n, gone) => {
    const { inner, clock, cache } = setup({ staleIfErrorMs: 600_000 });
    expect(await cache.access(ref)).toBe('v1');
    clock.advance(61_000);
    inner.failWith = gone;
    await expect(cache.access(ref)).rejects.toBe(gone);
    clock.advance(1_000);
    inner.failWith = transient;
    await expect(cache.access(ref)).rejects.toBe(transient);
  });

  it('invalidate(secret) forgets every reference to that secret only', async () => {
    const { inner, cache } = setup();
    await cache.access(ref);
    await cache.access({ secret: 's', version: '3' });
    await cache.access({ secret: 'other', version: 'latest' });
    cache.invalidate('s');
    inner.value = 'v2';
    expect(await cache.access(ref)).toBe('v2');
    expect(await cache.access({ secret: 'other', version: 'latest' })).toBe('v1');
    expect(inner.calls).toBe(4);
  });

  it('does not keep a value whose fetch straddled an invalidation', async () => {
    const { inner, cache } = setup();
    let open!: () => void;
    inner.gate = new Promise((r) => {
      open = r;
    });
    const first = cache.access(ref);
    cache.invalidate('s');
    open();
    await first;
    inner.gate = Promise.resolve();
    inner.value = 'v2';
    expect(await cache.access(ref)).toBe('v2');
  });

  it('a read unanswered past readDeadlineMs answers with the stale value; what it brings later is kept', async () => {
    // Secret Manager that stops answering: the client waits its own 60 s (retries included) before it
    // fails, and only then did the stale value answer — every lease acquire stalled a minute.
    const { inner, clock, cache } = setup({ staleIfErrorMs: 600_000, readDeadlineMs: 20 });
    expect(await cache.access(ref)).toBe('v1');
    clock.advance(60_000);
    let answer!: () => void;
    inner.gate = new Promise((r) => (answer = r));
    inner.value = 'v2';
    expect(await cache.access(ref)).toBe('v1');
    answer();
    await inner.gate;
    await Promise.resolve();
    expect(await cache.access(ref)).toBe('v2');
    expect(inner.calls).toBe(2);
  });

  it('with missDeadlineMs, a read with no copy waits that long, and one with a copy readDeadlineMs', async () => {
    const { inner, clock, cache } = setup({
      staleIfErrorMs: 600_000,
      readDeadlineMs: 20,
      missDeadlineMs: 200,
    });
    let answer!: () => void;
    inner.gate = new Promise((r) => setTimeout(r, 80));
    // A miss answered after 80 ms: past readDeadlineMs, within missDeadlineMs.
    expect(await cache.access(ref)).toBe('v1');
    clock.advance(60_000);
    inner.gate = new Promise((r) => (answer = r));
    inner.value = 'v2';
    // The copy answers at readDeadlineMs (20), not missDeadlineMs (200), the read still unanswered. Timed
    // on fake timers: a wall-clock bound flaked on a loaded machine (the unit tier shares its workers).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let served: string | undefined;
      const read = cache.access(ref).then((v) => (served = v));
      await vi.advanceTimersByTimeAsync(19);
      expect(served).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(served).toBe('v1'); // the copy
      await read;
    } finally {
      vi.useRealTimers();
    }
    expect(inner.calls).toBe(2); // the refresh went to Secret Manager, and has not answered yet
    answer();
    // And a miss no one answers fails at missDeadlineMs.
    inner.gate = new Promise(() => {});
    await expect(cache.access({ secret: 'other', version: '1' })).rejects.toMatchObject({
      message: 'Secret other/versions/1: no answer within 200 ms',
    });
  });

  it('with nothing to fall back on, a read unanswered past readDeadlineMs is a transient failure', async () => {
    const { inner, cache } = setup({ staleIfErrorMs: 600_000, readDeadlineMs: 20 });
    inner.gate = new Promise(() => {});
    await expect(cache.access(ref)).rejects.toMatchObject({
      name: 'SecretAccessError',
      kind: 'transient',
      message: 'Secret s/versions/latest: no answer within 20 ms',
    });
  });

  // The wall clock (systemClock) may step back (NTP). A copy read "after" now measured a negative age,
  // under any TTL: fresh until the clock caught up again, for as long as the step — and with ttlMs 0 (the
  // gateway, whose CredentialCache is its cache) `age < 0` made the last read answer every read meanwhile.
  it.each([
    ['ttlMs 60 s', 60_000],
    ['ttlMs 0', 0],
  ] as const)(
    'a clock stepped back makes no copy fresh (%s): the read goes to Secret Manager',
    async (_n, ttlMs) => {
      const { inner, clock, cache } = setup({ ttlMs });
      expect(await cache.access(ref)).toBe('v1');
      clock.advance(-3_600_000);
      inner.value = 'v2';
      expect(await cache.access(ref)).toBe('v2');
      expect(inner.calls).toBe(2);
    },
  );

  it('a copy read "after" now does not answer a transient failure as stale either', async () => {
    const { inner, clock, cache } = setup({ staleIfErrorMs: 600_000 });
    await cache.access(ref);
    clock.advance(-1_000);
    inner.failWith = transient;
    await expect(cache.access(ref)).rejects.toBe(transient);
  });

  it('with nothing that may answer from a copy (ttlMs 0, no stale-if-error) keeps none, and still shares concurrent reads', async () => {
    const { inner, cache } = setup({ ttlMs: 0 });
    let open!: () => void;
    inner.gate = new Promise((r) => {
      open = r;
    });
    const both = Promise.all([cache.access(ref), cache.access(ref)]);
    open();
    expect(await both).toEqual(['v1', 'v1']);
    expect(inner.calls).toBe(1);
    expect(cache.size).toBe(0); // no password kept past its read
    expect(await cache.access(ref)).toBe('v1');
    expect(inner.calls).toBe(2);
  });

  it('evicts the least recently used entry beyond maxEntries', async () => {
    const { inner, cache } = setup({ maxEntries: 2 });
    const a = { secret: 'a', version: 'latest' };
    const b = { secret: 'b', version: 'latest' };
    const c = { secret: 'c', version: 'latest' };
    await cache.access(a);
    await cache.access(b);
    await cache.access(a); // a is now the most recent
    await cache.access(c); // evicts b
    expect(inner.calls).toBe(3);
    await cache.access(a);
    expect(inner.calls).toBe(3);
    await cache.access(b);
    expect(inner.calls).toBe(4);
  });
});
