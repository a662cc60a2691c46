// The replacement slots' arithmetic: the cap, idempotent take and release, stale slots reclaimed.
import { describe, expect, it } from 'vitest';
import {
  type ReplacementSlot,
  releaseSlot,
  restampSlot,
  type SlotPolicy,
  takeSlot,
} from './replacement-slots.js';

const now = new Date('2026-03-01T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const policy: SlotPolicy = { limit: 2, staleAfterMs: 15 * 60_000 };
const a = { proxy: 'a', uid: 'uid-a' };
const b = { proxy: 'b', uid: 'uid-b' };
const c = { proxy: 'c', uid: 'uid-c' };
const held = (h: { proxy: string; uid: string }, takenAt = ago(60_000)): ReplacementSlot => ({
  ...h,
  takenAt,
});

describe('takeSlot', () => {
  it('grants a free slot and records the holder and when it took it', () => {
    expect(takeSlot([held(a)], b, now, policy)).toEqual({
      result: { granted: true },
      next: [held(a), { ...b, takenAt: now }],
    });
  });

  it('refuses when every slot is held, and changes nothing', () => {
    expect(takeSlot([held(a), held(b)], c, now, policy)).toEqual({
      result: { granted: false, inUse: 2, limit: 2 },
      next: null,
    });
  });

  it('lets a proxy already holding a slot proceed, without a second slot or a new takenAt', () => {
    const full = [held(a), held(b)];
    expect(takeSlot(full, a, now, policy)).toEqual({
      result: { granted: true, alreadyHeld: true },
      next: null,
    });
  });

  it('records the take that staged a slot; that take run again (its commit landed) finds it as taken, not held', () => {
    const taken = takeSlot([held(a)], b, now, policy, 'take-1');
    expect(taken).toEqual({
      result: { granted: true },
      next: [held(a), { ...b, takenAt: now, takeId: 'take-1' }],
    });
    expect(takeSlot(taken.next!, b, now, policy, 'take-1')).toEqual({
      result: { granted: true },
      next: null,
    });
    // Another take (a concurrent delivery) finds it held: not its to give back.
    expect(takeSlot(taken.next!, b, now, policy, 'take-2').result).toEqual({
      granted: true,
      alreadyHeld: true,
    });
    expect(takeSlot(taken.next!, b, now, policy).result).toEqual({ granted: true, alreadyHeld: true });
  });

  it('treats the same name with another uid (deleted and re-created) as another proxy', () => {
    expect(takeSlot([held(a), held(b)], { proxy: 'a', uid: 'uid-a2' }, now, policy).result).toEqual({
      granted: false,
      inUse: 2,
      limit: 2,
    });
  });

  it('reclaims a slot older than the bound: a crashed pass never wedges the fleet', () => {
    const stale = held(a, ago(policy.staleAfterMs));
    expect(takeSlot([stale, held(b)], c, now, policy)).toEqual({
      result: { granted: true },
      next: [held(b), { ...c, takenAt: now }],
    });
    // One second younger, it still holds.
    const young = held(a, ago(policy.staleAfterMs - 1000));
    expect(takeSlot([young, held(b)], c, now, policy).result.granted).toBe(false);
  });

  it('drops stale slots even when it refuses, and a stale holder re-takes as a newcomer', () => {
    const stale = held(a, ago(policy.staleAfterMs + 1));
    const full = [stale, held(b), held(c)];
    expect(takeSlot(full, a, now, { ...policy, limit: 2 })).toEqual({
      result: { granted: false, inUse: 2, limit: 2 },
      next: [held(b), held(c)],
    });
  });

  it('0 means unlimited: always granted, nothing recorded', () => {
    expect(takeSlot([held(a), held(b)], c, now, { ...policy, limit: 0 })).toEqual({
      result: { granted: true },
      next: null,
    });
  });
});

describe('releaseSlot', () => {
  it('frees the holder’s slot, and a second release changes nothing', () => {
    const first = releaseSlot([held(a), held(b)], a);
    expect(first).toEqual({ result: true, next: [held(b)] });
    expect(releaseSlot(first.next!, a)).toEqual({ result: false, next: null });
  });

  it('frees only the slot of that uid', () => {
    expect(releaseSlot([held(a)], { proxy: 'a', uid: 'other' })).toEqual({ result: false, next: null });
  });

  it('a Healthy verdict frees the slot unless it is about the very instance the slot replaces', () => {
    const replacingOld = { ...held(a), replacing: 'vm-a@T0' };
    // About the new instance: the replacement is over.
    expect(releaseSlot([replacingOld], a, 'vm-a@T1')).toEqual({ result: true, next: [] });
    // About the old one (it recovered as the rotation deleted it): the replacement is not.
    expect(releaseSlot([replacingOld], a, 'vm-a@T0')).toEqual({ result: false, next: null });
    // A verdict with no instance key, and a slot stored before `replacing` was: freed as before.
    expect(releaseSlot([replacingOld], a, '')).toEqual({ result: true, next: [] });
    expect(releaseSlot([held(a)], a, 'vm-a@T0')).toEqual({ result: true, next: [] });
    // A slot taken to replace an instance with no key ('') is freed by any keyed verdict.
    expect(releaseSlot([{ ...held(a), replacing: '' }], a, 'vm-a@T1').result).toBe(true);
  });
});

describe('takeSlot with what it replaces', () => {
  it('a new slot records the instance; a take of a held one leaves its record', () => {
    const taken = takeSlot([], a, now, policy, 't-1', { replacing: 'vm-a@T0' });
    expect(taken).toEqual({
      result: { granted: true },
      next: [{ ...a, takenAt: now, takeId: 't-1', replacing: 'vm-a@T0' }],
    });
    const slots = taken.next!;
    // A take on a cached plan for a later instance: granted as held, the record untouched (no write).
    expect(takeSlot(slots, a, now, policy, 't-2', { replacing: 'vm-a@T1' })).toEqual({
      result: { granted: true, alreadyHeld: true },
      next: null,
    });
  });
});

describe('restampSlot', () => {
  const slots: ReplacementSlot[] = [{ ...held(a), replacing: 'vm-a@T0' }, held(b)];
  it('records on the held slot what a delete made on it now replaces, takenAt kept', () => {
    expect(restampSlot(slots, a, 'vm-a@T1')).toEqual({
      result: true,
      next: [{ ...held(a), replacing: 'vm-a@T1' }, held(b)],
    });
  });
  it('the record it already holds: nothing to write', () => {
    expect(restampSlot(slots, a, 'vm-a@T0')).toEqual({ result: true, next: null });
  });
  it('no slot held (freed meanwhile, or another uid): none is taken', () => {
    expect(restampSlot([held(b)], a, 'vm-a@T1')).toEqual({ result: false, next: null });
    expect(restampSlot(slots, { proxy: 'a', uid: 'other' }, 'vm-a@T1')).toEqual({
      result: false,
      next: null,
    });
  });
});
