// The environment contract of every entry point. Only entry points call loadBaseConfig(env);
// the core and the handlers receive plain values.
import { z } from 'zod';

const hostPort = z.string().regex(/^[^:]+:\d+$/, 'host:port');

export const BaseEnv = z.object({
  GOOGLE_CLOUD_PROJECT: z.string().min(1).default('demo-proxyplane'),
  /** Set by the local plane and the tests; absent on GCP, where the real APIs are used. */
  FIRESTORE_EMULATOR_HOST: hostPort.optional(),
  PUBSUB_EMULATOR_HOST: hostPort.optional(),
  COMPUTE_EMULATOR_HOST: hostPort.optional(),
  SECRET_MANAGER_EMULATOR_HOST: hostPort.optional(),
  SCHEDULER_EMULATOR_HOST: hostPort.optional(),
  /** Cloud Scheduler / Compute region for the deployed plane. */
  REGION: z.string().default('us-central1'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
});
export type BaseConfig = z.infer<typeof BaseEnv>;

export function loadBaseConfig(env: NodeJS.ProcessEnv = process.env): BaseConfig {
  return BaseEnv.parse(env);
}

/**
 * A number from the environment. `z.coerce.number()` reads a blank value (`X=` in an env file,
 * `--update-env-vars X=`) as Number("") = 0, and for several settings 0 switches a brake off
 * (RECONCILE_MAX_REPLACING: no limit; CLOCK_SKEW_SECONDS: no allowance; GC_MIN_RUN_GAP_SECONDS: no
 * duplicate-tick guard): a blank value is refused as junk is, and unset still takes the default.
 * `schema` is the number's own checks: `envNumber(z.number().int().min(0)).default(5)`.
 */
export const envNumber = <T extends z.ZodType<number>>(schema: T) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v), schema);
