// FirestoreReplacementSlots against the Firestore emulator: the cap on concurrent stale-hash replacements
// holds under concurrent takers (each its own client, as separate function instances are); a duplicate
// delivery — the same proxy taking twice at once — holds one slot; release is idempotent; a slot older
// than the bound is taken over.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import {
  FirestoreReplacementSlots,
  REPLACEMENT_SLOTS_DOC,
} from '../../shared/src/adapters/firestore/replacement-slots.js';
import { ManualClock, systemClock } from '../../shared/src/ports/clock.js';
import { testProjectId } from '../support/emulators.js';
import { failNextCommitAfterLanding } from '../support/replayed-commit-firestore.js';

const clients: Firestore[] = [];
afterAll(() => Promise.all(clients.map((c) => c.terminate())));

/** A project of its own per case (the slots are one document per project), and `n` separate clients. */
function plane(n: number, limit: number, clock = systemClock) {
  const projectId = testProjectId('demo-slots');
  const dbs = Array.from({ length: n }, () => new Firestore({ projectId }));
  clients.push(...dbs);
  return dbs.map((db) => new FirestoreReplacementSlots(db, { limit, clock }));
}
const holder = (i: number) => ({ proxy: `p${i}`, uid: `uid-${i}` });

describe('FirestoreReplacementSlots', () => {
  it('concurrent takers never exceed the cap', async () => {
    const takers = plane(8, 3);
    const grants = await Promise.all(takers.map((s, i) => s.take(holder(i))));
    expect(grants.filter((g) => g.granted)).toHaveLength(3);
    expect(grants.filter((g) => !g.granted)).toEqual(
      Array.from({ length: 5 }, () => ({ granted: false, inUse: 3, limit: 3 })),
    );
    const held = await takers[0]!.list();
    expect(held).toHaveLength(3);
    // The holders are exactly the proxies that were granted.
    const granted = grants.flatMap((g, i) => (g.granted ? [holder(i).proxy] : []));
    expect(held.map((s) => s.proxy).sort()).toEqual(granted.sort());
  });

  it('the same proxy taking twice at once (a duplicate delivery) holds one slot', async () => {
    const [a, b, c] = plane(3, 2);
    const grants = await Promise.all([a!.take(holder(1)), b!.take(holder(1)), c!.take(holder(1))]);
    expect(grants.every((g) => g.granted)).toBe(true);
    // Exactly one of them took it; the others found it held (theirs is not to give back).
    expect(grants.filter((g) => g.granted && !g.alreadyHeld)).toHaveLength(1);
    expect(await a!.list()).toEqual([
      { ...holder(1), takenAt: expect.any(Date), takeId: expect.any(String) },
    ]);
    // Its second slot would have been the other proxy's: that one still gets in.
    expect(await b!.take(holder(2))).toEqual({ granted: true });
    expect(await c!.take(holder(3))).toEqual({ granted: false, inUse: 2, limit: 2 });
  });

  // The client runs a transaction again when its commit's answer is lost: the re-run found the slot this
  // take had staged and answered alreadyHeld, so the pass never gave it back when its plan changed.
  it.each<[string, number]>([
    ['UNAVAILABLE', 14],
    ['DEADLINE_EXCEEDED', 4],
  ])(
    'a take whose commit landed before its answer was lost (%s) is a take, not a slot held before',
    async (_n, code) => {
      const projectId = testProjectId('demo-slots');
      const db = new Firestore({ projectId });
      clients.push(db);
      const slots = new FirestoreReplacementSlots(db, { limit: 2, clock: systemClock });
      failNextCommitAfterLanding(db, code);
      expect(await slots.take(holder(1))).toEqual({ granted: true });
      expect(await slots.list()).toEqual([
        { ...holder(1), takenAt: expect.any(Date), takeId: expect.any(String) },
      ]);
      // The pass's give-back then frees it.
      expect(await slots.release(holder(1))).toBe(true);
      expect(await slots.list()).toEqual([]);
    },
  );

  it('a holder taking again keeps its slot and its takenAt', async () => {
    const [s] = plane(1, 1);
    await s!.take(holder(1));
    const [first] = await s!.list();
    expect(await s!.take(holder(1))).toEqual({ granted: true, alreadyHeld: true });
    expect(await s!.list()).toEqual([first]);
  });

  it('release is idempotent, also when two run at once', async () => {
    const [a, b] = plane(2, 1);
    await a!.take(holder(1));
    expect(await a!.take(holder(2))).toMatchObject({ granted: false });
    const released = await Promise.all([a!.release(holder(1)), b!.release(holder(1))]);
    expect(released.sort()).toEqual([false, true]);
    expect(await a!.release(holder(1))).toBe(false);
    expect(await a!.list()).toEqual([]);
    expect(await b!.take(holder(2))).toEqual({ granted: true });
  });

  it('a slot older than the bound is taken over; a younger one is not', async () => {
    const clock = new ManualClock(new Date('2026-03-01T12:00:00Z'));
    const [s] = plane(1, 1, clock);
    await s!.take(holder(1));
    clock.advance(15 * 60_000 - 1000);
    expect(await s!.take(holder(2))).toEqual({ granted: false, inUse: 1, limit: 1 });
    clock.advance(1000);
    expect(await s!.take(holder(2))).toEqual({ granted: true });
    expect(await s!.list()).toEqual([{ ...holder(2), takenAt: clock.now(), takeId: expect.any(String) }]);
    // The crashed holder's late release frees nothing of the new holder's.
    expect(await s!.release(holder(1))).toBe(false);
    expect(await s!.list()).toHaveLength(1);
  });

  it('0 is unlimited and records nothing', async () => {
    const [s] = plane(1, 0);
    for (let i = 0; i < 10; i++) expect(await s!.take(holder(i))).toEqual({ granted: true });
    expect(await s!.list()).toEqual([]);
  });
  // A Healthy verdict frees the slot only when it is about another instance than the one the slot was
  // taken to replace; a delete of a later instance on the held slot records that one (restamp).
  it('stores what a slot replaces; a verdict about that instance keeps it, one about another frees it', async () => {
    const [a, b] = plane(2, 1);
    expect(await a!.take(holder(1), { replacing: 'vm-1@T0' })).toEqual({ granted: true });
    expect(await b!.list()).toEqual([
      { ...holder(1), takenAt: expect.any(Date), takeId: expect.any(String), replacing: 'vm-1@T0' },
    ]);
    expect(await b!.release(holder(1), 'vm-1@T0')).toBe(false);
    expect(await b!.take(holder(1), { replacing: 'vm-1@T1' })).toEqual({ granted: true, alreadyHeld: true });
    expect((await a!.list())[0]!.replacing).toBe('vm-1@T0');
    expect(await b!.restamp(holder(1), 'vm-1@T1')).toBe(true);
    expect((await a!.list())[0]!.replacing).toBe('vm-1@T1');
    expect(await a!.release(holder(1), 'vm-1@T1')).toBe(false);
    expect(await a!.release(holder(1), 'vm-1@T2')).toBe(true);
    expect(await b!.list()).toEqual([]);
    // A slot freed meanwhile is not taken again by a restamp.
    expect(await b!.restamp(holder(1), 'vm-1@T3')).toBe(false);
    expect(await a!.list()).toEqual([]);
  });

  it("keeps on each slot the fields a newer revision stored, across this one's rewrite (a rolling deploy)", async () => {
    // Rolling audit: a revision before `replacing` rewrote the document without it, and the old instance's
    // Healthy verdict then freed a slot whose replacement still ran (one more past the cap).
    const projectId = testProjectId('demo-slots');
    const db = new Firestore({ projectId });
    clients.push(db);
    const slots = new FirestoreReplacementSlots(db, { limit: 5, clock: systemClock });
    expect(await slots.take(holder(1), { replacing: 'vm-1@T0' })).toEqual({ granted: true });
    const ref = db.collection(Collections.replacements).doc(REPLACEMENT_SLOTS_DOC);
    const stored = (await ref.get()).get('slots') as Array<Record<string, unknown>>;
    await ref.set({ slots: stored.map((s) => ({ ...s, futureField: 'x' })), futureTop: 1 });
    expect(await slots.take(holder(2))).toEqual({ granted: true });
    const after = (await ref.get()).get('slots') as Array<Record<string, unknown>>;
    expect(after.find((s) => s.proxy === 'p1')).toMatchObject({ futureField: 'x', replacing: 'vm-1@T0' });
    expect(after.find((s) => s.proxy === 'p2')).not.toHaveProperty('futureField');
    // A field this revision knows is written as it decides, whatever was stored.
    expect(await slots.restamp(holder(1), 'vm-1@T1')).toBe(true);
    expect((await ref.get()).get('slots')[0]).toMatchObject({ futureField: 'x', replacing: 'vm-1@T1' });
    expect(await slots.release(holder(1), 'vm-1@T0')).toBe(true);
    expect(((await ref.get()).get('slots') as Array<{ proxy: string }>).map((s) => s.proxy)).toEqual(['p2']);
    expect((await ref.get()).get('futureTop')).toBe(1);
  });
});
