// Snapshot ticks for tests, paced as Cloud Scheduler's are in effect: a tick every `everyMs`, but never
// before the previous tick's run has recorded its end (bounded). Fired blindly every second, a loaded
// machine's passes (over a second each) were claimed over by the next tick before they recorded their
// end — jobRuns/snapshot-tick then never showed a finished pass, and a test waiting for one
// (snapshotPassAfter) timed out though the passes ran. In production the ticks are a minute apart.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Firestore } from '@google-cloud/firestore';
import { SnapshotJob } from '../../functions/snapshot/src/job-run.js';
import { FirestoreJobRunStore } from '../../shared/src/adapters/firestore/job-run-store.js';

/** How long one tick's run may take to record its end before the next tick goes out anyway. */
const RUN_WAIT_MS = 15_000;

export interface PacedTicks {
  /** Ends the loop: resolves once no tick is in flight. */
  stop(): Promise<void>;
}

export function startPacedTicks(o: {
  firestore: Firestore;
  tick: () => Promise<void>;
  everyMs: number;
}): PacedTicks {
  const runs = new FirestoreJobRunStore(o.firestore);
  let running = true;
  const ended = async (sentAt: number): Promise<boolean> => {
    const run = await runs.get(SnapshotJob).catch(() => null);
    return run !== null && run.startedAt.getTime() >= sentAt && run.finishedAt !== null;
  };
  const loop = (async () => {
    while (running) {
      const sentAt = Date.now();
      const sent = await o.tick().then(
        () => true,
        () => false,
      );
      const deadline = sentAt + RUN_WAIT_MS;
      while (sent && running && Date.now() < deadline && !(await ended(sentAt))) await sleep(100);
      const rest = sentAt + o.everyMs - Date.now();
      if (running && rest > 0) await sleep(rest);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}
