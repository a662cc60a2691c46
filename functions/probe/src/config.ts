// The probe function's environment, parsed once by the entry point.
import { z } from 'zod';
import { BaseEnv, envNumber } from '../../../shared/src/config/env.js';
import { loadFunctionTable } from '../../../shared/src/config/topology.js';
import { DEFAULT_PASSIVE_RULE } from '../../../shared/src/domain/workers/passive.js';
import { MIN_PASS_BUDGET_MS } from './handler.js';
import { TARGET_CONCURRENCY_FACTOR } from './probe-pass.js';

const csv = z
  .string()
  .optional()
  .transform((s) =>
    s
      ? s
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : [],
  );

/** What the prober can fetch through a proxy (proxy-probe.ts): http or https. */
const httpUrl = z.string().url({ protocol: /^https?$/ });

const ProbeEnvFields = BaseEnv.extend({
  /** Proxies whose BASIC/EGRESS tiers run at once (each holds its slot for those only). */
  PROBE_CONCURRENCY: envNumber(z.number().int().min(1).max(512)).default(64),
  /** TARGET checks in flight at once across a pass, in slots of their own (docs/health.md § TARGET);
   *  unset = TARGET_CONCURRENCY_FACTOR × PROBE_CONCURRENCY. */
  PROBE_TARGET_CONCURRENCY: envNumber(z.number().int().min(1).max(2048)).optional(),
  /** Absolute http(s) URL of the echo the EGRESS tier fetches through each proxy (the API's /v1/echo, or
   *  an operator's plain-http echo: only through an http one can it see forwarding-header leaks,
   *  echo-scope.ts); unset disables the EGRESS tier. */
  PROBE_ECHO_URL: httpUrl.optional(),
  /** Where BASIC's CONNECT handshake goes (this URL's host and port) for a proxy without a health-check
   *  URL; unset = the echo URL's. Deployed, the API on 443, which every managed VM lets CONNECT reach: an
   *  http echo on port 80 would be refused there (squid's SSL_ports), failing BASIC for the whole fleet. */
  PROBE_HANDSHAKE_URL: httpUrl.optional(),
  /** The prober's own egress addresses (Cloud NAT IPs deployed, 127.0.0.1 locally). */
  PROBE_CALLER_IPS: csv,
  PROBE_TICK_PERIOD_SECONDS: envNumber(z.number().positive()).default(60),
  /** Keep probing inside one invocation this long, for sub-minute intervals; 0 = one pass per tick. */
  PROBE_LOOP_SECONDS: envNumber(z.number().min(0).max(540)).default(0),
  /** How long after its start a run waits for probe decisions: the function timeout (120 s,
   *  shared/topology/functions.json) less its last writes' time — at most the timeout less
   *  RUN_WRITES_SECONDS (refused above it, ProbeEnv). A pass still waiting then stores what it has
   *  (docs/health.md). */
  PROBE_RUN_BUDGET_SECONDS: envNumber(z.number().min(10).max(3600)).default(110),
  /** Local targets use self-signed certificates. Never set deployed. */
  PROBE_TLS_INSECURE: z
    .enum(['0', '1'])
    .default('0')
    .transform((v) => v === '1'),
  // The PASSIVE track (gateway outcomes, functions/probe/src/passive-pass.ts; docs/health.md).
  PROBE_PASSIVE_SUCCESS_THRESHOLD: envNumber(z.number().int().min(1).max(100)).default(2),
  PROBE_PASSIVE_FAILURE_THRESHOLD: envNumber(z.number().int().min(1).max(100)).default(3),
  /** Expire passive evidence after this long without a signal (dropped; a SUSPECT track demoted to
   *  AVAILABLE, its count kept, for one more window: passive-track.ts); unset = three tick periods. Counted
   *  in ticks (wiring passes the period): the first tick at least this less half a tick after the last
   *  signal — so it must exceed 1.5 tick periods. An active probe expires it only after this whole time. */
  PROBE_PASSIVE_EXPIRY_SECONDS: envNumber(z.number().positive()).optional(),
  /** Fewer outcomes than this for a proxy in a tick: no signal either way. */
  PROBE_PASSIVE_MIN_SAMPLES: envNumber(z.number().int().min(1)).default(DEFAULT_PASSIVE_RULE.minSamples),
  /** A failure share at or above this is a failed signal. */
  PROBE_PASSIVE_MAX_FAILURE_RATIO: envNumber(z.number().gt(0).max(1)).default(
    DEFAULT_PASSIVE_RULE.maxFailureRatio,
  ),
  /** Leave batches younger than this to the next tick (an API instance may still be committing them). */
  PROBE_PASSIVE_SETTLE_SECONDS: envNumber(z.number().min(0).max(60)).default(5),
});

/** What a run keeps of the function's timeout, past its budget, for its last writes (its stores and record). */
export const RUN_WRITES_SECONDS = 10;

export const ProbeEnv = ProbeEnvFields.transform((e, ctx) => {
  // A budget past the function's timeout (less the last writes' time) let passes run into the timeout: the
  // run killed, recorded as still running with its deadline ahead, and every later run waiting for that
  // deadline and killed in turn — active probing never stored anything again. The loop's bound below
  // follows the budget, so an operator raising the budget to lengthen the loop must be stopped here.
  const timeout = loadFunctionTable().functions.probe?.timeoutSeconds ?? 120;
  const mostBudget = timeout - RUN_WRITES_SECONDS;
  if (e.PROBE_RUN_BUDGET_SECONDS > mostBudget) {
    ctx.addIssue({
      code: 'custom',
      path: ['PROBE_RUN_BUDGET_SECONDS'],
      message: `must be at most the probe function's ${timeout} s timeout (shared/topology/functions.json) less ${RUN_WRITES_SECONDS} s for its last writes (${mostBudget})`,
    });
  }
  const expiry = e.PROBE_PASSIVE_EXPIRY_SECONDS ?? 3 * e.PROBE_TICK_PERIOD_SECONDS;
  // A pass starting at the loop's end is given MIN_PASS_BUDGET_MS at least: a loop past the run budget
  // less that ran its passes into the function's timeout, the run killed and recorded as still running
  // with its deadline ahead — and every later run waiting for that deadline, killed in turn: no active
  // probe ran again (terraform's probe_loop_seconds is bounded the same way).
  const mostLoop = e.PROBE_RUN_BUDGET_SECONDS - MIN_PASS_BUDGET_MS / 1000;
  if (e.PROBE_LOOP_SECONDS > mostLoop) {
    const ceiling = mostBudget - MIN_PASS_BUDGET_MS / 1000;
    ctx.addIssue({
      code: 'custom',
      path: ['PROBE_LOOP_SECONDS'],
      message: `must be at most PROBE_RUN_BUDGET_SECONDS less ${MIN_PASS_BUDGET_MS / 1000} (${mostLoop}); the budget cannot exceed ${mostBudget} (the ${timeout} s timeout less ${RUN_WRITES_SECONDS}), so the loop never exceeds ${ceiling}`,
    });
  }
  // Signals arrive once per tick, and the passive pass drops a track at the first tick at least the expiry
  // less half a tick after its last signal (passive-track.ts `tickPeriodMs`): that effective expiry must
  // exceed one tick, or every track goes at the next quiet tick (an 80 s expiry with 60 s ticks: at 60 s).
  if (expiry <= 1.5 * e.PROBE_TICK_PERIOD_SECONDS) {
    ctx.addIssue({
      code: 'custom',
      path: ['PROBE_PASSIVE_EXPIRY_SECONDS'],
      message: `must exceed 1.5 × PROBE_TICK_PERIOD_SECONDS (${1.5 * e.PROBE_TICK_PERIOD_SECONDS}): it counts in ticks, less half a tick`,
    });
  }
  return {
    ...e,
    /** The deployed timeout (functions.json), read once: the budget checks above and the run's record. */
    timeoutMs: timeout * 1000,
    PROBE_PASSIVE_EXPIRY_SECONDS: expiry,
    PROBE_TARGET_CONCURRENCY: e.PROBE_TARGET_CONCURRENCY ?? TARGET_CONCURRENCY_FACTOR * e.PROBE_CONCURRENCY,
  };
});
export type ProbeConfig = z.infer<typeof ProbeEnv>;

export const loadProbeConfig = (env: NodeJS.ProcessEnv = process.env): ProbeConfig => ProbeEnv.parse(env);
