// Cloud Scheduler's Job (as @google-cloud/scheduler decodes it) → the port's ScheduledJob. The decoded
// shapes differ by transport: gRPC gives enum names and int64 seconds as strings, the REST fallback may
// give numbers or Long objects; both are accepted.
import type { protos } from '@google-cloud/scheduler';
import type { AttemptStatus, ScheduledJob, ScheduledJobState } from '../../ports/job-scheduler.js';
import { rpcCodeName } from '../google-error-code.js';

type Job = protos.google.cloud.scheduler.v1.IJob;
type Timestamp = protos.google.protobuf.ITimestamp;

const STATES: readonly ScheduledJobState[] = [
  'STATE_UNSPECIFIED',
  'ENABLED',
  'PAUSED',
  'DISABLED',
  'UPDATE_FAILED',
];

function state(v: unknown): ScheduledJobState {
  if (typeof v === 'number') return STATES[v] ?? 'STATE_UNSPECIFIED';
  return STATES.find((s) => s === v) ?? 'STATE_UNSPECIFIED';
}

const int64 = (v: unknown): number => {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return Number(v);
  if (v && typeof (v as { toNumber?: unknown }).toNumber === 'function')
    return (v as { toNumber(): number }).toNumber();
  return Number.NaN;
};

/** A protobuf Timestamp as a Date; null when absent or unset (seconds 0 is "never" in these fields). */
export function timestamp(t: Timestamp | null | undefined): Date | null {
  if (!t) return null;
  const ms = int64(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
  return Number.isFinite(ms) && ms > 0 ? new Date(ms) : null;
}

function attemptStatus(job: Job, attempted: boolean): AttemptStatus | null {
  // Cloud Scheduler leaves `status` empty after a successful attempt: no attempt yet → null, else OK.
  if (!attempted) return null;
  const code = typeof job.status?.code === 'number' ? job.status.code : 0;
  return { code: rpcCodeName(code), message: job.status?.message ?? '' };
}

export function toScheduledJob(id: string, job: Job): ScheduledJob {
  const lastAttemptTime = timestamp(job.lastAttemptTime);
  const jobState = state(job.state);
  return {
    id,
    resource: job.name ?? '',
    description: job.description ?? '',
    schedule: job.schedule ?? '',
    timeZone: job.timeZone ?? '',
    state: jobState,
    lastAttemptTime,
    lastStatus: attemptStatus(job, lastAttemptTime !== null),
    nextRunTime: jobState === 'ENABLED' ? timestamp(job.scheduleTime) : null,
  };
}
