// The act step for one worker: what its next snapshot is (decided purely from the build and its stored
// header), then store → publish → mark sent. The grant is recorded with the snapshot BEFORE it is
// published, so the recorded grant is never behind anything a worker holds (ownership moves only after it).
import { type Prepared, prepare } from '../../../shared/src/domain/snapshots/canonical-fast.js';
import { contentDigest, workerContent } from '../../../shared/src/domain/snapshots/content.js';
import { chooseMessage, nextVersion } from '../../../shared/src/domain/snapshots/next.js';
import type { WorkerBuild } from '../../../shared/src/domain/snapshots/plan-pass.js';
import type { GatewayRoute, GatewaySnapshot } from '../../../shared/src/messages/gateway-snapshot.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { SnapshotHeader } from '../../../shared/src/ports/workers-snapshots.js';
import type { SnapshotPassDeps } from './deps.js';

export const RECENT_VERSIONS = 8;

export type WorkerStep =
  | { kind: 'publish'; build: WorkerBuild; full: GatewaySnapshot; prepared: Prepared; digest: string }
  | { kind: 'resend'; build: WorkerBuild }
  | { kind: 'patch_draining'; build: WorkerBuild }
  | { kind: 'none'; build: WorkerBuild };

export interface StepContext {
  epoch: number;
  routing: readonly GatewayRoute[];
  /** Routes that keep their unreachable proxies this pass (domain/snapshots/route-fail-open.ts). */
  failOpenRoutes: readonly string[];
  now: Date;
  header: SnapshotHeader | null;
  /** The worker's ACK bound (null before its first accepted ACK). */
  ackedVersion: number | null;
  /**
   * The planner lock this pass holds (pass.ts): a save is refused once the lock is another's, so a pass
   * that outlived its lock records no grant the next pass did not see.
   */
  lockHolder?: string;
}

const sameDraining = (a: Record<string, number>, b: Record<string, number>) => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
};

export function decideWorkerStep(deps: SnapshotPassDeps, build: WorkerBuild, x: StepContext): WorkerStep {
  const content = workerContent({
    workerId: build.workerId,
    epoch: x.epoch,
    grant: build.grant,
    routing: x.routing,
    owned: build.owned,
    now: x.now,
    allocationSafetyMarginMs: deps.settings.allocationSafetyMarginMs,
    protocolVersion: build.protocolVersion,
    failOpenRoutes: x.failOpenRoutes,
  });
  const prepared = prepare(content);
  const digest = contentDigest(prepared, deps.sha256);
  const step = nextVersion(x.header, prepared, digest, build.sessionId, deps.sha256);
  if (step.kind === 'changed') return { kind: 'publish', build, full: step.full, prepared, digest };
  const h = x.header!;
  const lagging = x.ackedVersion !== h.version;
  const quiet = !h.sentAt || x.now.getTime() - h.sentAt.getTime() >= deps.settings.resendAfterMs;
  if (lagging && quiet) return { kind: 'resend', build };
  if (!sameDraining(h.draining, build.draining)) return { kind: 'patch_draining', build };
  return { kind: 'none', build };
}

export interface StepResult {
  workerId: string;
  /** lost_race: another pass saved this version first, or holds the planner lock now; nothing was
   *  published but the stored snapshot again (resend), and the header's drains were left as they were. */
  kind: WorkerStep['kind'] | 'lost_race';
  message?: 'full' | 'delta';
  version?: number;
  bytes?: number;
}

/** false when the store refused the write as a lost race (another pass stored the version first, or
 *  holds the planner lock). */
async function lostRaceIsFalse(save: Promise<void>): Promise<boolean> {
  try {
    await save;
    return true;
  } catch (err) {
    if (err instanceof WorkerStoreError && err.kind === 'conflict') return false;
    throw err;
  }
}

function drainsNotPatched(deps: SnapshotPassDeps, workerId: string): StepResult {
  deps.log.warn('drains not recorded: another pass holds the planner lock', {
    event: 'gateway.snapshot_race_lost',
    workerId,
  });
  return { workerId, kind: 'lost_race' };
}

export async function actWorkerStep(
  deps: SnapshotPassDeps,
  s: WorkerStep,
  x: StepContext,
): Promise<StepResult> {
  const { workerId } = s.build;
  if (s.kind === 'none') return { workerId, kind: 'none' };
  // Only the pass holding the planner lock writes the header: its drains (what the API tells the worker to
  // stop using), a snapshot and its grant, and when it was sent.
  const guard = x.lockHolder === undefined ? undefined : { lockHolder: x.lockHolder };
  if (s.kind === 'patch_draining') {
    if (!(await lostRaceIsFalse(deps.snapshots.patchHeader(workerId, { draining: s.build.draining }, guard))))
      return drainsNotPatched(deps, workerId);
    return { workerId, kind: s.kind };
  }
  if (s.kind === 'resend') {
    const full = await deps.snapshots.loadFull(workerId);
    if (!full) return { workerId, kind: 'none' };
    // The stored snapshot: sending it again is harmless whoever holds the lock now.
    await deps.publisher.publish(full);
    const patched = deps.snapshots.patchHeader(
      workerId,
      { sentAt: deps.clock.now(), draining: s.build.draining },
      guard,
    );
    if (!(await lostRaceIsFalse(patched))) return drainsNotPatched(deps, workerId);
    deps.log.info('snapshot re-sent', {
      event: 'gateway.snapshot_resent',
      workerId,
      version: full.version,
      ackedVersion: x.ackedVersion,
    });
    return { workerId, kind: s.kind, message: 'full', version: full.version };
  }
  const h = x.header;
  const stored =
    h && h.sessionId === s.build.sessionId && h.version === s.full.version - 1
      ? await deps.snapshots.loadFull(workerId)
      : null;
  const base = stored ? { version: stored.version, prepared: prepare(stored) } : null;
  const message = chooseMessage(base, s.full, s.prepared);
  const granted = h?.grantedUntil && h.grantedUntil > s.build.grant ? h.grantedUntil : s.build.grant;
  const ref = { version: s.full.version, epoch: s.full.ownershipEpoch, checksum: s.full.checksum };
  const saved = await lostRaceIsFalse(
    deps.snapshots.save(
      {
        workerId,
        version: s.full.version,
        ownershipEpoch: s.full.ownershipEpoch,
        checksum: s.full.checksum,
        contentDigest: s.digest,
        sessionId: s.build.sessionId,
        generatedAt: new Date(s.full.generatedAt),
        validUntil: new Date(s.full.validUntil),
        grantedUntil: granted,
        draining: s.build.draining,
        recent: [...(h?.recent ?? []), ref].slice(-RECENT_VERSIONS),
        sentAt: null,
        proxies: s.full.proxies.length,
      },
      s.full,
      guard,
    ),
  );
  if (!saved) {
    // Another pass stored this version (or a later one) first, or holds the planner lock now: this pass
    // outlived its lock or lost the race. Publishing would hand the worker a second, different snapshot
    // of one version, or a grant the pass now planning never saw; what that pass stores is what is sent,
    // so stop here.
    deps.log.warn('snapshot not saved: another pass stored this version first or holds the planner lock', {
      event: 'gateway.snapshot_race_lost',
      workerId,
      version: s.full.version,
    });
    return { workerId, kind: 'lost_race', version: s.full.version };
  }
  await deps.publisher.publish(message.message);
  // Marked sent under the lock, as the save was: a pass that stalled in its publish past its lock would
  // otherwise mark the header of a later version — the next pass's, whose publish may have failed — as
  // sent just now, and that version would go out again only resendAfterMs later.
  if (!(await lostRaceIsFalse(deps.snapshots.patchHeader(workerId, { sentAt: deps.clock.now() }, guard)))) {
    deps.log.warn('snapshot sent but not marked sent: another pass holds the planner lock', {
      event: 'gateway.snapshot_race_lost',
      workerId,
      version: s.full.version,
    });
  }
  deps.log.info('snapshot built', {
    event: 'gateway.snapshot_built',
    workerId,
    version: s.full.version,
    epoch: s.full.ownershipEpoch,
    proxies: s.full.proxies.length,
    kind: message.kind,
    bytes: message.bytes,
  });
  return { workerId, kind: 'publish', message: message.kind, version: s.full.version, bytes: message.bytes };
}
