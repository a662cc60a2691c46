import { z } from 'zod';

/** Payload of a Scheduler tick (shared/topology/schedules.json `data`). */
export const Tick = z.object({ job: z.string().min(1).max(64) }).strict();
export type Tick = z.infer<typeof Tick>;
