import { describe, expect, it } from 'vitest';
import { at } from './fixtures.unit.js';
import {
  canonicalAcquire,
  IDEMPOTENCY_KEY_MAX,
  idempotencyScope,
  isIdempotencyKey,
  replayOf,
} from './idempotency.js';
import { AcquireRequest } from './wire.js';

const req = (body: unknown) => AcquireRequest.parse(body);

describe('isIdempotencyKey', () => {
  it.each([
    ['a UUID', '0f8fad5b-d9cb-469f-a165-70867728950e', true],
    ['letters, digits and ._:-', 'crawl.2026-12-02:run_7', true],
    ['one character', 'k', true],
    ['the longest', 'k'.repeat(IDEMPOTENCY_KEY_MAX), true],
    ['empty', '', false],
    ['one too long', 'k'.repeat(IDEMPOTENCY_KEY_MAX + 1), false],
    ['a space', 'a b', false],
    ['two headers joined by a comma', 'a, b', false],
    ['a slash', 'a/b', false],
    ['a line break', 'a\nb', false],
    ['non-ASCII', 'clé', false],
  ])('%s → %s', (_, key, ok) => {
    expect(isIdempotencyKey(key)).toBe(ok);
  });
});

describe('idempotencyScope', () => {
  it('is the same for one caller and key, and differs by caller or by key', () => {
    const id = idempotencyScope('crawler:a', 'k1');
    expect(idempotencyScope('crawler:a', 'k1')).toBe(id);
    expect(idempotencyScope('crawler:b', 'k1')).not.toBe(id);
    expect(idempotencyScope('crawler:a', 'k2')).not.toBe(id);
    // The separator keeps (holder, key) pairs apart that would concatenate alike.
    expect(idempotencyScope('crawler:a\nk', '1')).not.toBe(idempotencyScope('crawler:a', 'k\n1'));
  });
});

describe('canonicalAcquire', () => {
  it('is the same for the same request, its defaults spelt out or not, selector keys and protocols in any order', () => {
    expect(canonicalAcquire(req({}))).toBe(
      canonicalAcquire(req({ selector: {}, ttlSeconds: 300, exclusive: false, protocols: ['http'] })),
    );
    expect(
      canonicalAcquire(req({ selector: { region: 'eu', tier: 'a' }, protocols: ['http', 'socks5'] })),
    ).toBe(canonicalAcquire(req({ selector: { tier: 'a', region: 'eu' }, protocols: ['socks5', 'http'] })));
  });

  it.each([
    ['selector', { selector: { region: 'us' } }],
    ['ttlSeconds', { ttlSeconds: 60 }],
    ['target', { target: 'shop.example' }],
    ['exclusive', { exclusive: true }],
    ['protocols', { protocols: ['socks5'] }],
  ])('differs when %s differs', (_, change) => {
    const base = { selector: { region: 'eu' } };
    expect(canonicalAcquire(req({ ...base, ...change }))).not.toBe(canonicalAcquire(req(base)));
  });

  it('does not confuse a selector value with a key', () => {
    expect(canonicalAcquire(req({ selector: { a: 'b' } }))).not.toBe(
      canonicalAcquire(req({ selector: { b: 'a' } })),
    );
  });
});

describe('replayOf', () => {
  const record = { leaseId: 'L1', requestHash: 'h', expiresAt: at(600) };
  it('no record, or one past its window: acquire afresh', () => {
    expect(replayOf(null, 'h', at(0))).toEqual({ kind: 'fresh' });
    expect(replayOf(record, 'h', at(600))).toEqual({ kind: 'fresh' });
    expect(replayOf(record, 'other', at(601))).toEqual({ kind: 'fresh' });
  });
  it('within the window: the same request replays its lease, another one is a mismatch', () => {
    expect(replayOf(record, 'h', at(599))).toEqual({ kind: 'replay', leaseId: 'L1' });
    expect(replayOf(record, 'other', at(0))).toEqual({ kind: 'mismatch' });
  });
});
