// The observe step of a snapshot pass: everything the planner decides on, read once. Lease states are
// read only for the pool proxies that could be handed to a worker in this pass (usually none). Workers and
// headers are read only in view (shared/src/domain/workers/view.ts): live or lapsed within the horizon,
// and any header still granting something — not every gateway instance ever started.
import { DEFAULT_ROUTING } from '../../../shared/src/domain/snapshots/content.js';
import {
  leaseCandidates,
  type PassInput,
  type WorkerView,
} from '../../../shared/src/domain/snapshots/plan-pass.js';
import { owedBy } from '../../../shared/src/domain/workers/ack-owed.js';
import { reclaimHolds } from '../../../shared/src/domain/workers/reclaim-holds.js';
import { viewCutoff } from '../../../shared/src/domain/workers/view.js';
import { type GatewayRoute, wireRoute } from '../../../shared/src/messages/gateway-snapshot.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { SnapshotHeader } from '../../../shared/src/ports/workers-snapshots.js';
import type { SnapshotPassDeps } from './deps.js';
import { lastPublishedRouting, type PublishedRouting } from './last-routing.js';

export interface Observed {
  input: PassInput;
  routing: GatewayRoute[];
  headers: Map<string, SnapshotHeader>;
  lock: { holder: string; until: Date } | null;
  token: string | null;
  /** The lease states read for the assignable proxies: the planner's claims are preconditioned on them. */
  leaseVersions: Map<string, string | null>;
  skipped: string[];
  /** Routes of the stored routing dropped for repeating an earlier route's name. */
  routingDropped: string[];
  /**
   * The stored routing no longer fits the route schema: `routing` is the one the newest stored snapshot
   * carries (last-routing.ts), and this says why and which snapshot.
   */
  routingInvalid: { error: WorkerStoreError; snapshot: PublishedRouting['snapshot'] } | null;
}

export async function observe(deps: SnapshotPassDeps, now: Date): Promise<Observed> {
  const cutoff = viewCutoff(now, deps.settings);
  const [pool, state, { workers, headers }, stored, reclaims] = await Promise.all([
    deps.pool.inPool(),
    deps.ownership.read(),
    deps.workers.listInView(cutoff).then(async (workers) => ({
      workers,
      headers: await deps.snapshots.headersInView(
        workers.map((w) => w.session.workerId),
        cutoff,
      ),
    })),
    deps.routing.get().then(
      (routing) => ({ routing, invalid: null }),
      (err: unknown) => {
        if (err instanceof WorkerStoreError && err.kind === 'invalid') return { routing: null, invalid: err };
        throw err;
      },
    ),
    deps.reclaims.list(now),
  ]);
  const { routing } = stored;
  const published = stored.invalid ? lastPublishedRouting(headers) : null;
  // Nothing published to fall back on (no snapshot stored yet): the pass fails, as it always has.
  if (stored.invalid && !published) throw stored.invalid;
  const views = new Map<string, WorkerView>(
    workers.map((w) => [
      w.session.workerId,
      {
        session: w.session,
        report: w.report,
        grantedUntil: headers.get(w.session.workerId)?.grantedUntil ?? null,
        ackOwed: owedBy(headers.get(w.session.workerId), w.session),
      },
    ]),
  );
  // A worker whose session document is gone (or lapsed just past the horizon) still holds whatever it was
  // granted: keep it in view (not live) so its records wait for the grant to lapse instead of moving at
  // once. The header query returns every grant lasting past the cutoff, so none is missed.
  for (const [id, h] of headers) {
    if (!views.has(id) && h.grantedUntil) {
      views.set(id, { session: ghostSession(id), report: null, grantedUntil: h.grantedUntil });
    }
  }
  const poolUids = new Map(pool.proxies.map((p) => [p.name, p.uid]));
  // A reclaim asked for a proxy deleted and created again since does not reclaim the new one.
  const reclaimed = new Set(
    reclaims
      .filter((r) => {
        const uid = poolUids.get(r.proxy);
        return uid !== undefined && reclaimHolds(r, uid);
      })
      .map((r) => r.proxy),
  );
  // A lease counts as active for one clock skew past its expiry: the API, whose clock may trail this
  // one's, could still renew it after this pass had claimed the proxy for a worker.
  const { leased, versions: leaseVersions } = await deps.leases.leased(
    leaseCandidates({ poolSpecs: pool.proxies, records: state.records, reclaimed, workers: views, now }),
    new Date(now.getTime() - deps.settings.skewMs),
  );
  // Workers get each route without its target check (control-plane only, messages/gateway-snapshot.ts).
  const routes = published ? published.routes : routing ? routing.routes.map(wireRoute) : DEFAULT_ROUTING;
  return {
    input: {
      now,
      poolSpecs: pool.proxies,
      reclaimed,
      leased,
      epoch: state.epoch,
      records: state.records,
      workers: views,
      routing: routes,
      settings: deps.settings,
    },
    routing: routes,
    headers,
    lock: state.lock,
    token: state.token,
    leaseVersions,
    skipped: pool.skipped,
    routingDropped: routing?.droppedDuplicates ?? [],
    routingInvalid:
      stored.invalid && published ? { error: stored.invalid, snapshot: published.snapshot } : null,
  };
}

function ghostSession(workerId: string): WorkerView['session'] {
  const never = new Date(0);
  return {
    workerId,
    instanceId: '',
    sessionId: '',
    zone: '',
    protocolVersion: 0,
    principal: '',
    registeredAt: never,
    validUntil: never,
    ackedVersion: null,
    ackedEpoch: null,
    ackedChecksum: null,
    lastReportSequence: null,
    lastReportDigest: null,
    outcomeSequence: 0,
  };
}
