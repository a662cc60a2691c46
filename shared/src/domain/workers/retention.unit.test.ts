import { describe, expect, it } from 'vitest';
import { decideRetention, type RetentionFacts, retentionCutoff } from './retention.js';

const now = new Date('2026-12-01T12:00:00Z');
const WEEK = 7 * 86_400_000;
const cutoff = retentionCutoff(now, WEEK);
const ago = (ms: number) => new Date(cutoff.getTime() - ms);
const later = (ms: number) => new Date(cutoff.getTime() + ms);
const EPOCH = 40;

/** A worker gone for longer than the retention: session, grant and snapshot all ended before the cutoff. */
const dead = (over: Partial<RetentionFacts> = {}): RetentionFacts => ({
  sessionValidUntil: ago(3600_000),
  header: { grantedUntil: ago(3400_000), validUntil: ago(3400_000), ownershipEpoch: EPOCH - 1 },
  owns: false,
  ...over,
});

describe('retentionCutoff', () => {
  it('is now minus the retention', () => {
    expect(retentionCutoff(now, WEEK)).toEqual(new Date('2026-11-24T12:00:00Z'));
  });
});

describe('decideRetention', () => {
  it('a worker gone for longer than the retention goes whole: document, header (and parts)', () => {
    expect(decideRetention(dead(), cutoff, EPOCH)).toEqual({ kind: 'delete', header: true });
  });

  it('a swept header (grant cleared) and no header at all both still let the worker go', () => {
    const swept = dead({ header: { grantedUntil: null, validUntil: ago(1), ownershipEpoch: 3 } });
    expect(decideRetention(swept, cutoff, EPOCH)).toEqual({ kind: 'delete', header: true });
    expect(decideRetention(dead({ header: null }), cutoff, EPOCH)).toEqual({ kind: 'delete', header: false });
  });

  it.each([
    ['a live session', dead({ sessionValidUntil: new Date(now.getTime() + 30_000) }), 'session_recent'],
    ['a session that ended inside the retention', dead({ sessionValidUntil: later(1) }), 'session_recent'],
    ['a session that ends exactly at the cutoff', dead({ sessionValidUntil: cutoff }), 'session_recent'],
    [
      'a grant lasting past the cutoff (a ghost header)',
      dead({ header: { grantedUntil: later(1), validUntil: ago(1), ownershipEpoch: 1 } }),
      'grant_recent',
    ],
    [
      'a snapshot valid past the cutoff',
      dead({ header: { grantedUntil: null, validUntil: cutoff, ownershipEpoch: 1 } }),
      'snapshot_recent',
    ],
    ['an owner the planner still names', dead({ owns: true }), 'owns_proxies'],
    ['nothing stored', { sessionValidUntil: null, header: null, owns: false }, 'nothing_stored'],
  ] as const)('keeps %s', (_, facts, reason) => {
    expect(decideRetention(facts, cutoff, EPOCH)).toEqual({ kind: 'keep', reason });
  });

  it('keeps the header while the epoch has not moved past it (a returning id restarts at version 1)', () => {
    const sameEpoch = dead({ header: { grantedUntil: ago(1), validUntil: ago(1), ownershipEpoch: EPOCH } });
    expect(decideRetention(sameEpoch, cutoff, EPOCH)).toEqual({ kind: 'delete', header: false });
    // Once the document is gone, only the header is left: nothing to do until the epoch moves.
    const ghost = { ...sameEpoch, sessionValidUntil: null };
    expect(decideRetention(ghost, cutoff, EPOCH)).toEqual({ kind: 'keep', reason: 'epoch_unchanged' });
    expect(decideRetention(ghost, cutoff, EPOCH + 1)).toEqual({ kind: 'delete', header: true });
  });

  it('an orphan header (its worker document deleted by hand) goes once past the retention', () => {
    expect(decideRetention(dead({ sessionValidUntil: null }), cutoff, EPOCH)).toEqual({
      kind: 'delete',
      header: true,
    });
  });
});
