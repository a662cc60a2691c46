// What the admin views show, computed purely from what was read: each worker's session standing, and each
// gateway-pool proxy's owner with its usable capacity judged fail-closed (contract §2: counts count only
// while session, report TTL, ownership and epoch are all valid; otherwise zero, with the reason). Typed by
// the response schemas /openapi.json publishes (admin-openapi.ts).
import type { ProxyResource } from '../../../../shared/src/domain/proxy.js';
import { type OwnershipRecord, recordOf } from '../../../../shared/src/domain/workers/ownership.js';
import { isLive } from '../../../../shared/src/domain/workers/session.js';
import { countsFor } from '../../../../shared/src/domain/workers/usable-capacity.js';
import type { WorkerRecord } from '../../../../shared/src/ports/workers.js';
import type { SnapshotHeader } from '../../../../shared/src/ports/workers-snapshots.js';
import type { GatewayWorkerView, OwnershipEntry } from './admin-openapi.js';

export function workerView(
  w: WorkerRecord,
  header: SnapshotHeader | undefined,
  owned: number,
  now: Date,
): GatewayWorkerView {
  const s = w.session;
  return {
    workerId: s.workerId,
    instanceId: s.instanceId,
    sessionId: s.sessionId,
    zone: s.zone,
    principal: s.principal,
    live: isLive(s, now),
    validUntil: s.validUntil.toISOString(),
    ackedVersion: s.ackedVersion,
    ackedEpoch: s.ackedEpoch,
    lastReportSequence: s.lastReportSequence,
    reportAgeSeconds: w.report ? Math.round((now.getTime() - w.report.receivedAt.getTime()) / 1000) : null,
    draining: w.report?.sessionId === s.sessionId && w.report.draining,
    owned,
    // A header read only for its version and grant (snapshot-store.ts readableHeader) has nothing else
    // to show: no snapshot, as before the pass writes it whole again.
    snapshot:
      header && !header.salvaged
        ? {
            version: header.version,
            ownershipEpoch: header.ownershipEpoch,
            proxies: header.proxies,
            grantedUntil: header.grantedUntil?.toISOString() ?? null,
            drainingAway: Object.keys(header.draining).length,
          }
        : null,
  };
}

export interface OwnershipInputs {
  epoch: number;
  records: ReadonlyMap<string, OwnershipRecord>;
  pool: readonly ProxyResource[];
  workers: ReadonlyMap<string, WorkerRecord>;
  headers: ReadonlyMap<string, SnapshotHeader>;
  reportTtlMs: number;
  now: Date;
}

export function ownershipView(x: OwnershipInputs): OwnershipEntry[] {
  const pool = new Map(x.pool.map((p) => [p.name, p]));
  const names = [...new Set([...pool.keys(), ...x.records.keys()])].sort();
  return names.map((proxy) => {
    const r = x.records.get(proxy);
    const w = r ? x.workers.get(r.owner) : undefined;
    // A record kept for a proxy deleted since, its name taken by a new one (ownership.ts recordOf): the row
    // is that record's — out of the pool, no capacity — until its drain ends and the new one is given out.
    const inPool = pool.get(proxy);
    const current = inPool && (!r || recordOf(r, inPool.uid)) ? inPool : undefined;
    const cap = current?.spec.capacity ?? 0;
    const v = countsFor(proxy, {
      capacity: cap,
      ownership: {
        owner: r && r.drainEpoch === null ? r.owner : null,
        epoch: r?.since ?? 0,
        expiresAt: r ? (x.headers.get(r.owner)?.grantedUntil ?? null) : null,
      },
      ownerSessionId: w && isLive(w.session, x.now) ? w.session.sessionId : null,
      report: w?.report ?? null,
      currentEpoch: x.epoch,
      reportTtlMs: x.reportTtlMs,
      now: x.now,
    });
    return {
      proxy,
      inPool: current !== undefined,
      owner: r?.owner ?? null,
      since: r?.since ?? null,
      drainEpoch: r?.drainEpoch ?? null,
      capacity: cap,
      ...(v.valid
        ? {
            active: v.active,
            reserved: v.reserved,
            usable: Math.max(0, cap - v.active - v.reserved),
            reason: null,
          }
        : { active: null, reserved: null, usable: 0, reason: r?.drainEpoch != null ? 'draining' : v.reason }),
    };
  });
}
