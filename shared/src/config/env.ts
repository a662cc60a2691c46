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
