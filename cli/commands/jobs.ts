// proxyplane jobs list | run NAME | pause NAME | resume NAME — the periodic jobs of
// shared/topology/schedules.json through the admin API (docs/operations-jobs.md).
import { exactlyOne, none, outputOf } from '../args.js';
import type { Ctx } from '../context.js';
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

export async function listJobs({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const res = await api.call<{ jobs: JobJson[] }>('GET', '/v1/jobs', { role: 'admin' });
  if (output === 'json') return io.out(json(res));
  if (output === 'yaml') return io.out(yaml(res));
  io.out(res.jobs.length === 0 ? 'No jobs.' : jobTable(res.jobs, io.now()));
}

const PAST: Record<string, string> = { run: 'run requested', pause: 'paused', resume: 'resumed' };

export const jobAction =
  (action: 'run' | 'pause' | 'resume') =>
  async ({ api, io, args }: Ctx): Promise<void> => {
    const name = exactlyOne(args.positionals, 'job NAME');
    const output = outputOf(args.values, ['table', 'json', 'yaml']);
    // The method is part of the path (`:run`); the name is encoded so it cannot add another.
    const job = await api.call<JobJson>('POST', `/v1/jobs/${encodeURIComponent(name)}:${action}`, {
      role: 'admin',
    });
    if (output === 'json') return io.out(json(job));
    if (output === 'yaml') return io.out(yaml(job));
    io.out(`job ${name} ${PAST[action]}\n${jobTable([job], io.now())}`);
  };
