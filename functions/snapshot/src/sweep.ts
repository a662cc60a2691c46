// The storage sweep, run after a tick's pass: the parts of snapshots whose grant ended long ago (a dead
// gateway instance's; Cloud Run registers a worker id per instance) are deleted, their small headers
// kept so that a worker id that comes back (pinned ids: GATEWAY_WORKER_ID) continues above its old
// version. Bounded per tick and idempotent (the store re-checks each header in a transaction). Worker
// documents stay: only the API writes them. A failed sweep is logged and left to the next tick — it must
// never cost the pass that ran before it.
import type { SnapshotPassDeps } from './deps.js';

export async function sweepOldSnapshots(
  deps: Pick<SnapshotPassDeps, 'snapshots' | 'clock' | 'log' | 'sweep'>,
): Promise<number> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - deps.sweep.afterMs);
  try {
    const swept = await deps.snapshots.sweepParts(cutoff, deps.sweep.batch, now);
    if (swept.length > 0) {
      deps.log.info('old snapshot parts swept', {
        event: 'gateway.snapshots_swept',
        workers: swept,
        grantEndedBefore: cutoff.toISOString(),
      });
    }
    return swept.length;
  } catch (err) {
    deps.log.warn('snapshot sweep failed; the next tick tries again', { error: err });
    return 0;
  }
}
