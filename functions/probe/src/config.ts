// The probe function's environment, parsed once by the entry point.
import { z } from 'zod';
import { BaseEnv } from '../../../shared/src/config/env.js';

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

export const ProbeEnv = BaseEnv.extend({
  PROBE_CONCURRENCY: z.coerce.number().int().min(1).max(512).default(64),
  /** Absolute http URL of the API's /v1/echo; unset disables the EGRESS tier. */
  PROBE_ECHO_URL: z.string().url().optional(),
  /** The prober's own egress addresses (Cloud NAT IPs deployed, 127.0.0.1 locally). */
  PROBE_CALLER_IPS: csv,
  PROBE_TICK_PERIOD_SECONDS: z.coerce.number().positive().default(60),
  /** Keep probing inside one invocation this long, for sub-minute intervals; 0 = one pass per tick. */
  PROBE_LOOP_SECONDS: z.coerce.number().min(0).max(540).default(0),
  /** Local targets use self-signed certificates. Never set deployed. */
  PROBE_TLS_INSECURE: z
    .enum(['0', '1'])
    .default('0')
    .transform((v) => v === '1'),
});
export type ProbeConfig = z.infer<typeof ProbeEnv>;

export const loadProbeConfig = (env: NodeJS.ProcessEnv = process.env): ProbeConfig => ProbeEnv.parse(env);
