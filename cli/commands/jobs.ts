// proxyplane jobs list | run NAME | pause NAME | resume NAME — the periodic jobs of
// shared/topology/schedules.json through the admin API (docs/operations-jobs.md).
import { exactlyOne, none, outputOf } from '../args.js';
import type { Ctx } from '../context.js';
import { InputError } from '../errors.js';
import { age, json, table, yaml } from '../output.js';

export interface JobJson {
  name: string;
  schedule: string;
  state: string;
  lastAttemptTime: string | null;
  lastStatus: { code: string; message: string } | null;
  nextRunTime?: string | null;
  lastRun: {
    startedAt: string;
    finishedAt: string | null;
    ok: boolean | null;
    counts: Record<string, number>;
    error?: string | null;
  } | null;
}

function lastRun(j: JobJson, now: Date): string {
  const r = j.lastRun;
  if (!r) return '-';
  const outcome = r.finishedAt === null ? 'running' : r.ok ? 'ok' : 'failed';
  return `${outcome} ${age(r.startedAt, now)} ago`;
}

const counts = (j: JobJson) =>
  Object.entries(j.lastRun?.counts ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',') || '-';

function jobTable(jobs: JobJson[], now: Date): string {
  return table(
    ['NAME', 'STATE', 'SCHEDULE', 'LAST TICK', 'TICK STATUS', 'LAST RUN', 'COUNTS'],
    jobs.map((j) => [
      j.name,
      j.state,
      j.schedule,
      j.lastAttemptTime ? `${age(j.lastAttemptTime, now)} ago` : '-',
      j.lastStatus?.code ?? '-',
      lastRun(j, now),
      counts(j),
    ]),
  );
}

/** What GET /v1/jobs answers; `missing` is absent from an API older than it. */
interface JobListJson {
  jobs: JobJson[];
  count: number;
  missing?: string[];
}

/**
 * The jobs of the schedule table that Cloud Scheduler lacks, said on stderr as `proxies list` says its
 * skipped documents: the table stays what a script parses, the exit stays 0 (the listing itself is whole),
 * and the operator learns of them — it should never happen (docs/operations-jobs.md).
 */
function missingNote(missing: string[]): string {
  return `${missing.length} job(s) of the schedule table are not in Cloud Scheduler and are not listed: ${missing.join(', ')} (not deployed, or the API runs with another REGION than Terraform's)`;
}

export async function listJobs({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const res = await api.call<JobListJson>('GET', '/v1/jobs', { role: 'admin' });
  if (output === 'json') return io.out(json(res));
  if (output === 'yaml') return io.out(yaml(res));
  if (res.missing?.length) io.err(missingNote(res.missing));
  io.out(res.jobs.length === 0 ? 'No jobs.' : jobTable(res.jobs, io.now()));
}

/**
 * A Cloud Scheduler job id (letters, digits, `-`, `_`; at most 500): Terraform names each job by its
 * schedule table id, so no job the API controls has another shape. The table itself is not checked here,
 * so that a job an API newer than this CLI has can still be named.
 */
const JOB_NAME = /^[A-Za-z0-9_-]{1,500}$/;

/**
 * The one NAME of `jobs run|pause|resume`, checked before anything is sent: an empty one went out as
 * `POST /v1/jobs/:run`, and one holding `:` or `/` as another path — each answered as a route the API
 * lacks, whose hint blamed an API older than the CLI.
 */
export function jobNameArg(positionals: string[]): string {
  const name = exactlyOne(positionals, 'job NAME');
  if (!JOB_NAME.test(name)) {
    const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
    throw new InputError(
      `not a job name: ${shown} (letters, digits, "-" and "_", as \`proxyplane jobs list\` shows them)`,
    );
  }
  return name;
}

const PAST: Record<string, string> = { run: 'run requested', pause: 'paused', resume: 'resumed' };

/**
 * What `jobs run` says around the job's row. Cloud Scheduler answers RunJob with the job as it stood, so
 * its LAST TICK and TICK STATUS are the previous attempt's: bare under "run requested", the row read as
 * this run's outcome (OK for a run whose publish then failed). The run's own shows in the job afterwards.
 */
const runSaid = (row: string) =>
  `Cloud Scheduler accepted the run; its outcome is not known yet. The job as it stood before the run:\n${row}\nWatch \`proxyplane jobs list\`: LAST TICK moves to now with this run's TICK STATUS, then LAST RUN shows the function's run`;

export const jobAction =
  (action: 'run' | 'pause' | 'resume') =>
  async ({ api, io, args }: Ctx): Promise<void> => {
    const name = jobNameArg(args.positionals);
    const output = outputOf(args.values, ['table', 'json', 'yaml']);
    // The method is part of the path (`:run`); the name is encoded so it cannot add another.
    const job = await api.call<JobJson>('POST', `/v1/jobs/${encodeURIComponent(name)}:${action}`, {
      role: 'admin',
    });
    if (output === 'json') return io.out(json(job));
    if (output === 'yaml') return io.out(yaml(job));
    const row = jobTable([job], io.now());
    io.out(`job ${name} ${PAST[action]}\n${action === 'run' ? runSaid(row) : row}`);
  };
