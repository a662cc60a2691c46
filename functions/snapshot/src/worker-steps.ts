// The act step for one worker: what its next snapshot is (decided purely from the build and its stored
// header), then store → publish → mark sent. The grant is recorded with the snapshot BEFORE it is
// published, so the recorded grant is never behind anything a worker holds (ownership moves only after it).
import {
  buildPrepared,
  type Prepared,
  prepare,
} from '../../../shared/src/domain/snapshots/canonical-fast.js';
import { contentDigest, workerContent } from '../../../shared/src/domain/snapshots/content.js';
import { chooseMessage, nextVersion } from '../../../shared/src/domain/snapshots/next.js';
import type { WorkerBuild } from '../../../shared/src/domain/snapshots/plan-pass.js';
import { nextAckOwed } from '../../../shared/src/domain/workers/ack-owed.js';
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
  /** The earlier sessions of the same process the worker's session took that bound from (newest first),
   *  whose ACK debt it carries (workers/session.ts boundFrom). */
  boundFrom: readonly string[] | null;
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

/** The worker's content this pass, prepared, and its digest. */
function contentOf(deps: SnapshotPassDeps, build: WorkerBuild, x: StepContext) {
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
  return { prepared, digest: contentDigest(prepared, deps.sha256) };
}

export function decideWorkerStep(deps: SnapshotPassDeps, build: WorkerBuild, x: StepContext): WorkerStep {
  const { prepared, digest } = contentOf(deps, build, x);
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
    const full = await storedSnapshot(deps, workerId, x.header);
    // Nothing readable to send again, and the worker has not ACKed what it was sent: the next version of the
    // same content instead, in full, whose save writes every part anew.
    if (full === UNREADABLE) return actPublish(deps, republished(deps, s, x), x, guard, null);
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
  return actPublish(deps, s, x, guard, await deltaBase(deps, s, x.header));
}

const UNREADABLE = Symbol('unreadable');

/**
 * The stored full snapshot, or UNREADABLE when a part no longer fits the schema: written by a newer release
 * whose proxy fields this one's strict schema refuses (after a rollback, as excludedRoutes, socks5 and
 * suspect were to the releases before them), or edited by hand. Failing the step on it failed it every
 * pass for good, as nothing else rewrites the parts: the worker got no new version, so no renewed grant,
 * and stopped serving while its session, and its proxies, stayed live.
 */
async function storedSnapshot(
  deps: SnapshotPassDeps,
  workerId: string,
  header: SnapshotHeader | null,
): Promise<GatewaySnapshot | null | typeof UNREADABLE> {
  try {
    return await deps.snapshots.loadFull(workerId);
  } catch (err) {
    if (!(err instanceof WorkerStoreError && err.kind === 'invalid')) throw err;
    deps.log.warn('stored snapshot unreadable: sending a full snapshot of a new version instead', {
      event: 'gateway.snapshot_unreadable',
      workerId,
      version: header?.version,
      error: err,
    });
    return UNREADABLE;
  }
}

/** A resend whose stored snapshot cannot be read, as the publish of the next version of its content. */
function republished(
  deps: SnapshotPassDeps,
  s: Extract<WorkerStep, { kind: 'resend' }>,
  x: StepContext,
): Extract<WorkerStep, { kind: 'publish' }> {
  const { prepared, digest } = contentOf(deps, s.build, x);
  const full = buildPrepared(prepared, (x.header?.version ?? 0) + 1, deps.sha256);
  return { kind: 'publish', build: s.build, full, prepared, digest };
}

/** The stored snapshot a delta to `s` is cut from: the version before it, built for the same session. */
async function deltaBase(
  deps: SnapshotPassDeps,
  s: Extract<WorkerStep, { kind: 'publish' }>,
  h: SnapshotHeader | null,
): Promise<GatewaySnapshot | null> {
  if (!h || h.sessionId !== s.build.sessionId || h.version !== s.full.version - 1) return null;
  const stored = await storedSnapshot(deps, s.build.workerId, h);
  // Unreadable: the full snapshot goes, and its save rewrites every part.
  return stored === UNREADABLE ? null : stored;
}

async function actPublish(
  deps: SnapshotPassDeps,
  s: Extract<WorkerStep, { kind: 'publish' }>,
  x: StepContext,
  guard: { lockHolder: string } | undefined,
  stored: GatewaySnapshot | null,
): Promise<StepResult> {
  const { workerId } = s.build;
  const h = x.header;
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
        ackOwed: nextAckOwed(
          h,
          { sessionId: s.build.sessionId, boundFrom: x.boundFrom },
          x.ackedVersion,
          s.full.version,
          x.now,
        ),
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
