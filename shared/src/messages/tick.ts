import { z } from 'zod';

const tickFields = { job: z.string().min(1).max(64) };

/**
 * Payload of a Scheduler tick (shared/topology/schedules.json `data`), as it is sent: strict, so a
 * schedule or a test that misspells a field fails.
 */
export const Tick = z.object(tickFields).strict();
export type Tick = z.infer<typeof Tick>;

/**
 * A tick as the functions read it: a top-level field this version does not know (a newer schedule
 * table's, while a deployment rolls out) is dropped and named in one WARNING (decode-push.ts
 * logUnknownFields), never poison — a poisoned tick is a sweep skipped.
 */
export const ReceivedTick = z.object(tickFields);
export type ReceivedTick = z.infer<typeof ReceivedTick>;
