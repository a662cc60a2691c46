// Cloud Scheduler v1 REST shapes (google/cloud/scheduler/v1/job.proto), so @google-cloud/scheduler
// parses our answers. Its REST transport asks for `$alt=json;enum-encoding=int` (recipes §5, §10):
// enums then travel as numbers.
import type { JobView } from './jobs.js';

const STATE_NUMBER = { ENABLED: 1, PAUSED: 2 } as const;

export interface ResourceContext {
  projectId: string;
  location: string;
  intEnums: boolean;
}

export const jobName = (ctx: Pick<ResourceContext, 'projectId' | 'location'>, id: string): string =>
  `projects/${ctx.projectId}/locations/${ctx.location}/jobs/${id}`;

export function toRestJob(view: JobView, ctx: ResourceContext): Record<string, unknown> {
  return {
    name: jobName(ctx, view.id),
    description: view.description,
    pubsubTarget: {
      topicName: `projects/${ctx.projectId}/topics/${view.topic}`,
      data: view.data.toString('base64'),
      attributes: view.attributes,
    },
    schedule: view.schedule,
    timeZone: view.timeZone,
    userUpdateTime: view.userUpdateTime.toISOString(),
    state: ctx.intEnums ? STATE_NUMBER[view.state] : view.state,
    ...(view.lastStatus && { status: view.lastStatus }),
    ...(view.scheduleTime && { scheduleTime: view.scheduleTime.toISOString() }),
    ...(view.lastAttemptTime && { lastAttemptTime: view.lastAttemptTime.toISOString() }),
  };
}

/** Google's JSON error body: https://cloud.google.com/apis/design/errors#http_mapping */
export const GOOGLE_ERRORS = {
  not_found: { http: 404, status: 'NOT_FOUND' },
  failed_precondition: { http: 400, status: 'FAILED_PRECONDITION' },
  invalid_argument: { http: 400, status: 'INVALID_ARGUMENT' },
  unimplemented: { http: 501, status: 'UNIMPLEMENTED' },
  unavailable: { http: 503, status: 'UNAVAILABLE' },
} as const;
export type GoogleErrorKind = keyof typeof GOOGLE_ERRORS;

export function googleError(kind: GoogleErrorKind, message: string) {
  const { http, status } = GOOGLE_ERRORS[kind];
  return { http, body: { error: { code: http, message, status } } };
}
