// The probe function after a failed run, against the Firestore emulator (the job-run record) and a real
// proxy: the run after a failed one probes the failed run's whole window again, from where that window
// started (the deadline of the run before it, recorded with the failed run's end) — not from the failed
// run's start, which left the slots in between to their next slot, one interval late (docs/health.md).

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { handleProbeTick, ProbeJob } from '../../functions/probe/src/handler.js';
import { FirestoreJobRunStore } from '../../shared/src/adapters/firestore/job-run-store.js';
import { hashFraction, nextSlotAfter } from '../../shared/src/domain/health/due.js';
import { testProjectId } from '../support/emulators.js';
import { startProbeFleet } from '../support/probe-fleet.js';

describe('probe function: the run after a failed one', () => {
  it('probes the slots between the coverage of the run before the failed one and the failed run’s start', async () => {
    // One pass a tick (loopMs 0), a tick a second: a run covers up to its start; a one-minute interval, so a
    // slot left out waits a minute.
    const fleet = await startProbeFleet(testProjectId());
    try {
      const { proxy } = await fleet.add('p-gap', {
        healthCheck: {
          url: fleet.target.url,
          intervalSeconds: 60,
          timeoutSeconds: 2,
          successThreshold: 2,
          failureThreshold: 2,
        },
      });
      const probes = () =>
        fleet.log.lines.filter((l) => l.message === 'probe' && l.proxy === 'p-gap' && l.tier === 'BASIC')
          .length;
      const slot = nextSlotAfter(proxy.uid, 60_000, fleet.clock.now()).getTime();

      // A finishes 400 ms before the proxy's slot: it covered up to there.
      fleet.clock.set(new Date(slot - 400));
      expect(await handleProbeTick(fleet.deps)).not.toBeNull();
      expect(probes()).toBe(0);

      // B, 600 ms after the slot, fails before probing anything: its window started at A's coverage end.
      fleet.clock.advance(1000);
      const down = { watchAll: async () => Promise.reject(new Error('injected: firestore unavailable')) };
      await expect(handleProbeTick({ ...fleet.deps, proxies: down })).rejects.toThrow('injected');
      const failed = await new FirestoreJobRunStore(fleet.db).get(ProbeJob);
      expect(failed).toMatchObject({ ok: false, windowStart: new Date(slot - 400) });

      // C probes B's window again, the slot included (before: from B's start, the slot a minute later).
      expect(await fleet.tick(1000)).not.toBeNull();
      expect(probes()).toBe(1);
      expect(await new FirestoreJobRunStore(fleet.db).get(ProbeJob)).toMatchObject({
        ok: true,
        windowStart: new Date(slot - 400),
      });
    } finally {
      await fleet.stop();
    }
  });

  it('takes up a failed run where its stored passes end: what it stored is not probed and counted again', async () => {
    // B loops over two slots, stores the first proxy's pass and fails storing the second's. Taken up from
    // B's first window, C probed the first proxy again on top of its stored result: a failing proxy
    // reached its threshold an interval early. A one-second interval: both slots within a second. A success
    // threshold no probe here reaches: each probe changes the stored state, so each pass writes.
    const fleet = await startProbeFleet(testProjectId());
    try {
      const check = {
        url: fleet.target.url,
        intervalSeconds: 1,
        timeoutSeconds: 1,
        successThreshold: 10,
        failureThreshold: 2,
      };
      // Slot phases 200–300 ms apart (uids picked for them): B's first pass probes both at its start, 600 ms
      // before the first one's slot, and the probe checks a proxy again no sooner than half an interval
      // after its last check in the run (check-spacing.ts) — random uids put the slots anywhere in the
      // second, and one run in several left a slot within 500 ms of B's start unprobed, B not failing.
      const added = [
        await fleet.add('p-one', { healthCheck: check }, uidWithPhase(0.1, 0.15)),
        await fleet.add('p-two', { healthCheck: check }, uidWithPhase(0.35, 0.4)),
      ];
      // The first proxy's next slot two seconds on (room for A before it), the second's the one after it.
      const firstSlot = nextSlotAfter(
        added[0]!.proxy.uid,
        1000,
        new Date(fleet.clock.now().getTime() + 2000),
      );
      const slots = [firstSlot, nextSlotAfter(added[1]!.proxy.uid, 1000, firstSlot)].map((d) => d.getTime());
      const [first, second] = added.map(({ proxy }, i) => ({
        name: proxy.name,
        slot: slots[i]!,
        probes: () =>
          fleet.log.lines.filter((l) => l.message === 'probe' && l.proxy === proxy.name && l.tier === 'BASIC')
            .length,
      }));
      if (!first || !second) throw new Error('two proxies');
      const counts = () => [first.probes(), second.probes()];

      // A (one pass: its deadline, recorded, is its start); then B, 1.1 s later (past the claim's gap),
      // loops past the second slot. B starts after the second proxy's previous slot and 600 ms before the
      // first's: its first pass, from A's deadline, stores both, so the only slot of the second proxy B
      // reaches later is the one whose write fails.
      const startB = first.slot - 600;
      expect(startB).toBeGreaterThan(second.slot - 1000);
      fleet.clock.set(new Date(startB - 1100));
      expect(await handleProbeTick(fleet.deps)).not.toBeNull();
      fleet.clock.set(new Date(startB));
      const health = fleet.health;
      const failing = Object.create(health) as typeof health;
      failing.writeMany = async (writes) => {
        if (fleet.clock.now().getTime() >= second.slot && writes.some((w) => w.state.proxy === second.name))
          throw new Error('injected: firestore unavailable');
        return health.writeMany(writes);
      };
      const b = {
        ...fleet.deps,
        health: failing,
        loopMs: second.slot - startB + 200,
        sleep: async (ms: number) => fleet.clock.advance(ms),
      };
      const beforeB = counts();
      await expect(handleProbeTick(b)).rejects.toThrow('injected');
      const afterB = counts();
      expect(afterB[0]! - beforeB[0]!).toBeGreaterThanOrEqual(1);
      expect(afterB[1]! - beforeB[1]!).toBeGreaterThanOrEqual(1);
      // The first proxy's pass, stored, ended at its slot: the next run starts there.
      expect(await new FirestoreJobRunStore(fleet.db).get(ProbeJob)).toMatchObject({
        ok: false,
        windowStart: new Date(first.slot),
      });

      // C, before the first proxy's next slot: the second proxy's slot again, not the first's.
      fleet.clock.set(new Date(Math.max(second.slot + 1, first.slot + 250)));
      expect(await handleProbeTick(fleet.deps)).not.toBeNull();
      const afterC = counts();
      expect([afterC[0]! - afterB[0]!, afterC[1]! - afterB[1]!]).toEqual([0, 1]);
    } finally {
      await fleet.stop();
    }
  });
});

/** A uid whose probe slot falls at a fraction of its interval in [from, to) (due.ts: hash(uid)). */
function uidWithPhase(from: number, to: number): string {
  for (let i = 0; i < 100_000; i++) {
    const uid = randomUUID();
    const f = hashFraction(uid);
    if (f >= from && f < to) return uid;
  }
  throw new Error('no uid found');
}
