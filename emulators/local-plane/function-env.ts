// What the functions read beyond the shared env contract, set for a local run: the tick periods follow
// the local scheduler's cadence (schedules.json `localEverySeconds` / speed), the EGRESS probe fetches the
// local API's /v1/echo, and the prober's own address is loopback. A value the developer set wins.
// SNAPSHOT_TICK_SECONDS goes to the API as well (localApiEnv): both check the worker timings against it.
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
  const gcPeriod = opts.schedules.jobs['gc-sweep']?.localEverySeconds;
  const snapshotPeriod = opts.schedules.jobs['snapshot-tick']?.localEverySeconds;
  const wanted: Record<string, string | undefined> = {
    PROBE_ECHO_URL: `${opts.apiUrl}/v1/echo`,
    PROBE_CALLER_IPS: '127.0.0.1',
    PROBE_TICK_PERIOD_SECONDS: period('probe-tick'),
    REQUEUE_TICK_PERIOD_SECONDS: period('requeue-sweep'),
    // A tick within this gap of the last sweep is a duplicate (gc config.ts, default 15 s): it must stay
    // below the tick period, or `--speed` ticks came inside it and about every other one swept nothing.
    GC_MIN_RUN_GAP_SECONDS:
      gcPeriod === undefined ? undefined : String(Math.min(15, Math.floor(gcPeriod / opts.speed / 2))),
    // The worker timings are checked against the snapshot tick's period (workers/settings.ts), a whole
    // number of seconds: rounded up, the side on which the check is stricter.
    SNAPSHOT_TICK_SECONDS:
      snapshotPeriod === undefined ? undefined : String(Math.max(1, Math.ceil(snapshotPeriod / opts.speed))),
    // Local targets (the demo target) use self-signed certificates; never set deployed.
    PROBE_TLS_INSECURE: '1',
  };
  return Object.fromEntries(
    Object.entries(wanted).filter(
      (e): e is [string, string] => e[1] !== undefined && opts.env[e[0]] === undefined,
    ),
  );
}

/** What of the functions' local env the API reads too: the worker timings' snapshot tick. */
export function localApiEnv(functionEnv: Record<string, string>): Record<string, string> {
  const tick = functionEnv.SNAPSHOT_TICK_SECONDS;
  return tick === undefined ? {} : { SNAPSHOT_TICK_SECONDS: tick };
}
