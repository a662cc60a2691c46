// The /v1/jobs resource (docs/operations-jobs.md): what Cloud Scheduler reports of a job of
// shared/topology/schedules.json, plus the last run its function recorded in Firestore.
import { z } from '@hono/zod-openapi';

const instant = z.string().openapi({ format: 'date-time' });

export const JobRunBody = z
  .object({
    startedAt: instant,
    finishedAt: instant.nullable().openapi({ description: 'null while the run is in progress' }),
    ok: z.boolean().nullable(),
    counts: z.record(z.string(), z.number()).openapi({ description: 'What the run did; per job.' }),
    error: z.string().nullable(),
  })
  .openapi('JobRun');

export const JobBody = z
  .object({
    name: z.string().openapi({ description: 'The job id of schedules.json', example: 'gc-sweep' }),
    resource: z.string().openapi({ example: 'projects/p/locations/us-central1/jobs/gc-sweep' }),
    description: z.string(),
    schedule: z.string(),
    timeZone: z.string(),
    state: z.enum(['STATE_UNSPECIFIED', 'ENABLED', 'PAUSED', 'DISABLED', 'UPDATE_FAILED']),
    lastAttemptTime: instant.nullable(),
    lastStatus: z
      .object({ code: z.string().openapi({ example: 'OK' }), message: z.string() })
      .nullable()
      .openapi({ description: "The last attempt's google.rpc.Status (publishing the tick)" }),
    nextRunTime: instant.nullable(),
    lastRun: JobRunBody.nullable(),
  })
  .openapi('Job');
export type JobBody = z.infer<typeof JobBody>;

export const JobList = z.object({ jobs: z.array(JobBody), count: z.number().int() }).openapi('JobList');

export const JobNameParam = z.object({
  name: z.string().openapi({ param: { name: 'name', in: 'path' }, example: 'gc-sweep' }),
});
