// Payloads of the snapshot-requests topic (shared/topology/pubsub.json): the Scheduler's tick, or a
// request from the API (a worker registered, a drain may have completed, an admin change). Every payload
// asks for the same thing — one planning pass — so an unknown reason from a newer publisher is still a
// valid request, never a poison message.
import { z } from 'zod';
import { WorkerId } from './gateway-snapshot.js';
import { Tick } from './tick.js';

export const SnapshotRequest = z
  .object({
    /** register | drained | admin | proxy-change | resync … (free text: logged, never branched on). */
    reason: z.string().min(1).max(64),
    /** The worker that prompted it, when one did: a new session of it gets a full snapshot at once. */
    workerId: WorkerId.optional(),
  })
  .strict();
export type SnapshotRequest = z.infer<typeof SnapshotRequest>;

export const SnapshotTopicPayload = z.union([Tick, SnapshotRequest]);
export type SnapshotTopicPayload = z.infer<typeof SnapshotTopicPayload>;

export const SNAPSHOT_REQUESTS_TOPIC = 'snapshot-requests';
export const GATEWAY_SNAPSHOTS_TOPIC = 'gateway-snapshots';
