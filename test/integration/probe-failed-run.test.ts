// The probe function after a failed run, against the Firestore emulator (the job-run record) and a real
// proxy: the run after a failed one probes the failed run's whole window again, from where that window
// started (the deadline of the run before it, recorded with the failed run's end) — not from the failed
// run's start, which left the slots in between to their next slot, one interval late (docs/health.md).
import { describe, expect, it } from 'vitest';
import { handleProbeTick, ProbeJob } from '../../functions/probe/src/handler.js';
import { FirestoreJobRunStore } from '../../shared/src/adapters/firestore/job-run-store.js';
import { nextSlotAfter } from '../../shared/src/domain/health/due.js';
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
      const down = { listAll: async () => Promise.reject(new Error('injected: firestore unavailable')) };
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
});
