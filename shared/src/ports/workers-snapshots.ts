// The ports of snapshot distribution (contract §3): the latest full snapshot per worker kept in Firestore
// (so a worker can always ask for it), publishing snapshots and deltas on Pub/Sub, the per-worker filtered
// subscription, and asking the snapshot function for a pass.

import type { ProxyResource } from '../domain/proxy.js';
import type { BuiltSnapshotRef } from '../domain/workers/ack.js';
import type { AckOwed } from '../domain/workers/ack-owed.js';
import type { GatewayRoute, GatewaySnapshot, GatewaySnapshotMessage } from '../messages/gateway-snapshot.js';
import type { SnapshotRequest } from '../messages/worker-snapshot-request.js';
import type { WorkerStoreError } from './workers.js';

export interface SnapshotHeader {
  workerId: string;
  version: number;
  ownershipEpoch: number;
  checksum: string;
  contentDigest: string;
  /** The worker session it was built for. */
  sessionId: string | null;
  generatedAt: Date;
  validUntil: Date;
  /** The latest expiry of anything ever sent to the worker: ownership moves only after it (+ skew). */
  grantedUntil: Date | null;
  /** Proxies being drained away from the worker → the epoch each drain started at (revokeProxyIds). */
  draining: Record<string, number>;
  /** The last versions built, newest last: an ACK must name one of them. */
  recent: BuiltSnapshotRef[];
  sentAt: Date | null;
  /**
   * The ACK the session owes (domain/workers/ack-owed.ts): a version saved that it has not ACKed,
   * nor any later one. Absent on a header stored before it was recorded, and on a salvaged one.
   */
  ackOwed?: AckOwed | null;
  proxies: number;
  /** The routing the snapshot carries (every snapshot of a pass the same); absent on a salvaged header. */
  routing?: GatewayRoute[];
  /**
   * Read from a header that no longer fits the model whole (headersInView): only `version` and
   * `grantedUntil` are what is stored; the rest reads as never sent.
   */
  salvaged?: true;
}

/** One sweep's outcome: the worker ids whose parts went, and the ones whose transaction failed. */
export interface SweepResult {
  swept: string[];
  failed: Array<{ workerId: string; kind: WorkerStoreError['kind'] }>;
}

export interface SnapshotStore {
  header(workerId: string): Promise<SnapshotHeader | null>;
  /** The headers of `workerIds` that fit the model whole (one that does not is left out): admin listings. */
  headersOf(workerIds: readonly string[]): Promise<Map<string, SnapshotHeader>>;
  /**
   * The headers of `workerIds` plus every header whose grant lasts past `cutoff` (domain/workers/view.ts:
   * a grant outlives its worker document in the "ghost" case): what a snapshot pass reads. A header that
   * no longer fits the model whole still comes back with its version and grant, the rest as never sent.
   */
  headersInView(workerIds: readonly string[], cutoff: Date): Promise<Map<string, SnapshotHeader>>;
  /** The latest full snapshot (header + parts), or null. */
  loadFull(workerId: string): Promise<GatewaySnapshot | null>;
  /**
   * Stores a new latest snapshot: parts and the header that points at them, at once. Refuses with
   * WorkerStoreError `conflict` when the stored version is already ≥ this one (another pass saved first),
   * or — given `guard` — when the planner lock is no longer held by `guard.lockHolder` (the pass outlived
   * its lock: the next pass may have moved proxies on the grants it read, so a grant recorded now could
   * hand a worker a proxy another already owns).
   */
  save(header: SnapshotHeader, full: GatewaySnapshot, guard?: { lockHolder: string }): Promise<void>;
  /**
   * Deletes the parts of at most `limit` snapshots whose grant ended before `cutoff`, keeping their
   * headers (and versions); loadFull() of a swept one is null. Returns the swept worker ids, and the
   * headers whose sweep failed (each is left as it was, for the next sweep). Idempotent. Throws only when
   * the headers to sweep cannot be listed.
   */
  sweepParts(cutoff: Date, limit: number, now: Date): Promise<SweepResult>;
  /**
   * Updates header fields that do not change the snapshot itself (grant, draining, sentAt). Given `guard`,
   * refuses with WorkerStoreError `conflict` — as save() does — when the planner lock is no longer held by
   * `guard.lockHolder`: the API tells the worker which proxies to stop using from `draining`, and a pass
   * that outlived its lock would overwrite the drains the pass now holding it recorded.
   */
  patchHeader(
    workerId: string,
    patch: Partial<Pick<SnapshotHeader, 'grantedUntil' | 'draining' | 'sentAt'>>,
    guard?: { lockHolder: string },
  ): Promise<void>;
}

export interface SnapshotPublisher {
  /** Publishes with the workerId / kind / version / baseVersion / checksum attributes; returns the message id. */
  publish(message: GatewaySnapshotMessage): Promise<string>;
}

export interface WorkerSubscriptions {
  /** Creates the worker's filtered subscription if missing; returns its full name. Idempotent. */
  ensure(workerId: string): Promise<string>;
}

export interface SnapshotRequester {
  request(req: SnapshotRequest): Promise<void>;
}

/** The proxies whose spec puts them in the gateway pool (deleted or not: the planner decides). */
export interface GatewayPoolReader {
  inPool(): Promise<{ proxies: ProxyResource[]; skipped: string[] }>;
}
