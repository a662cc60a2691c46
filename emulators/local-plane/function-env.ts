// What the functions read beyond the shared env contract, set for a local run: the tick periods follow
// the local scheduler's cadence (schedules.json `localEverySeconds` / speed), the EGRESS probe fetches the
// local API's /v1/echo, and the prober's own address is loopback. A value the developer set wins.
import type { ScheduleTable } from '../../shared/src/config/topology.js';

export function localFunctionEnv(opts: {
  apiUrl: string;
  speed: number;
  schedules: ScheduleTable;
  env: NodeJS.ProcessEnv;
}): Record<string, string> {
  const period = (job: string): string | undefined => {
    const j = opts.schedules.jobs[job];
    return j ? String(j.localEverySeconds / opts.speed) : undefined;
  };
  const wanted: Record<string, string | undefined> = {
    PROBE_ECHO_URL: `${opts.apiUrl}/v1/echo`,
    PROBE_CALLER_IPS: '127.0.0.1',
    PROBE_TICK_PERIOD_SECONDS: period('probe-tick'),
    REQUEUE_TICK_PERIOD_SECONDS: period('requeue-sweep'),
    // Local targets (the demo target) use self-signed certificates; never set deployed.
    PROBE_TLS_INSECURE: '1',
  };
  return Object.fromEntries(
    Object.entries(wanted).filter(
      (e): e is [string, string] => e[1] !== undefined && opts.env[e[0]] === undefined,
    ),
  );
}
