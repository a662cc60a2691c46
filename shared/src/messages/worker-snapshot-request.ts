// Payloads of the snapshot-requests topic (shared/topology/pubsub.json): the Scheduler's tick, or a
// request from the API (a worker registered, a drain may have completed, an admin change). Every payload
// asks for the same thing — one planning pass — so an unknown reason from a newer publisher is still a
// valid request, never a poison message; so is one with a top-level field this version does not know
// (ReceivedSnapshotTopicPayload drops it, and the handler names it in one WARNING). Publishers send the
// strict schemas (Tick, SnapshotRequest): a field they misspell fails.
import { z } from 'zod';
import { WorkerId } from './gateway-snapshot.js';
import { ReceivedTick } from './tick.js';

const snapshotRequestFields = {
  /** register | register-resumed | first-ack | ack-resumed | ack-replayed | worker-draining | drained | admin | proxy-change | resync … (free text: logged, never branched on). */
  reason: z.string().min(1).max(64),
  /** The worker that prompted it, when one did: a new session of it gets a full snapshot at once. */
  workerId: WorkerId.optional(),
};

/** A request as the API sends it. */
export const SnapshotRequest = z.object(snapshotRequestFields).strict();
export type SnapshotRequest = z.infer<typeof SnapshotRequest>;

/**
 * What the snapshot function reads from the topic: a tick or a request, unknown top-level fields dropped.
 * A payload with a `job` is a tick (the union tries it first): a request that also carried a `job` would
 * be read as a tick — the same pass, only not retried on failure (handler.ts).
 */
export const ReceivedSnapshotTopicPayload = z.union([ReceivedTick, z.object(snapshotRequestFields)]);
export type ReceivedSnapshotTopicPayload = z.infer<typeof ReceivedSnapshotTopicPayload>;

export const SNAPSHOT_REQUESTS_TOPIC = 'snapshot-requests';
export const GATEWAY_SNAPSHOTS_TOPIC = 'gateway-snapshots';
