// The API service's environment (read by main.ts only, parsed from an env object so tests pass their own):
// the shared base contract, where to listen, and admin auth (auth/config.ts).
//   PORT (8080; Cloud Run sets it), HOST (0.0.0.0), K_REVISION (Cloud Run's revision, reported as version),
//   K_SERVICE (set on Cloud Run: one trusted X-Forwarded-For hop for /v1/echo and the failed-authentication
//   limit's client address, middleware/client-address.ts), MAX_BODY_BYTES (65536).
//   /v1/jobs talks to Cloud Scheduler in REGION, or to SCHEDULER_EMULATOR_HOST; in local mode without
//   it, there is no scheduler (the routes answer 503) rather than a client hunting for Google credentials.
//   MANAGED_PROXY_PORTS ("3128" or "3128,8080"): the ports the proxy VMs' firewall opens, the only ones a
//   managed proxy's spec.port may take (shared/src/domain/managed-ports.ts); Terraform sets its
//   var.proxy_port. Unset: any port (the local plane and tests have no such firewall).
//   RATE_LIMIT_LEASE_ACQUIRE, RATE_LIMIT_LEASE_OTHER, RATE_LIMIT_DISCOVERY, RATE_LIMIT_ADMIN_WRITE,
//   RATE_LIMIT_ADMIN_READ ("<per second>:<burst>", such as "1000:2000"): each route class's per-caller rate
//   limit (middleware/caller-rate-limit.ts; defaults and why: docs/api.md § Rate limits).
//   RATE_LIMIT_AUTH_FAILURE (the same format, such as "10:100"): failed authentications per client address
//   (middleware/auth-failure-limit.ts).
import { z } from 'zod';
import { BaseEnv, envNumber } from '../../../shared/src/config/env.js';
import { type AuthConfig, loadAuthConfig } from './auth/config.js';
import { type LeaseConfig, loadLeaseConfig } from './leases/config.js';
import { DEFAULT_AUTH_FAILURE_RATE } from './middleware/auth-failure-limit.js';
import { type CallerRates, DEFAULT_CALLER_RATES } from './middleware/caller-rate-limit.js';
import type { RateSpec } from './middleware/token-bucket.js';
import { loadWorkersApiConfig, type WorkersApiConfig } from './workers/config.js';

/**
 * How long an admin request waits for Pub/Sub to confirm the reconcile request that follows its write: it
 * is best effort, logged when it fails, and the requeue sweep catches up (the worker plane's snapshot-pass
 * requests wait WORKER_PUBLISH_DEADLINE_MS instead). Without it a Pub/Sub outage held each request in the
 * client library's retries (up to 10 minutes): the CLI (30 s) and Cloud Run gave up on writes that had
 * landed.
 */
export const API_PUBLISH_DEADLINE_MS = 10_000;

const PORT_LIST = 'comma-separated TCP ports, each an integer 1-65535 (such as 3128 or 3128,8080)';
const ListedPort = z
  .string()
  .regex(/^[0-9]{1,5}$/, PORT_LIST)
  .transform(Number)
  .pipe(z.number().int().min(1, PORT_LIST).max(65535, PORT_LIST));
// "" is malformed, not "any": an empty list would refuse every managed proxy, and the way to allow any
// port is to leave the variable unset.
const PortList = z
  .string()
  .transform((text) => text.split(',').map((entry) => entry.trim()))
  .pipe(z.array(ListedPort))
  .transform((ports) => [...new Set(ports)].sort((a, b) => a - b));

const RATE =
  '"<per second>:<burst>": a rate of 0.001-100000 requests a second and a whole burst of 1-1000000 (such as 1000:2000)';
/** One limit: "<per second>:<burst>"; unset, its default. */
const Rate = (fallback: RateSpec) =>
  z
    .string()
    .regex(/^\s*[0-9]+(\.[0-9]+)?\s*:\s*[0-9]+\s*$/, RATE)
    .transform((text): RateSpec => {
      const [perSecond, burst] = text.split(':').map(Number) as [number, number];
      return { perSecond, burst };
    })
    .refine(
      (r) => r.perSecond >= 0.001 && r.perSecond <= 100_000 && r.burst >= 1 && r.burst <= 1_000_000,
      RATE,
    )
    .default(fallback);

const ApiEnv = BaseEnv.extend({
  PORT: envNumber(z.number().int().min(0).max(65535)).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  K_REVISION: z.string().default('local'),
  K_SERVICE: z.string().optional(),
  MAX_BODY_BYTES: envNumber(
    z
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024),
  ).default(64 * 1024),
  MANAGED_PROXY_PORTS: PortList.optional(),
  RATE_LIMIT_LEASE_ACQUIRE: Rate(DEFAULT_CALLER_RATES['lease-acquire']),
  RATE_LIMIT_LEASE_OTHER: Rate(DEFAULT_CALLER_RATES['lease-other']),
  RATE_LIMIT_DISCOVERY: Rate(DEFAULT_CALLER_RATES.discovery),
  RATE_LIMIT_ADMIN_WRITE: Rate(DEFAULT_CALLER_RATES['admin-write']),
  RATE_LIMIT_ADMIN_READ: Rate(DEFAULT_CALLER_RATES['admin-read']),
  RATE_LIMIT_AUTH_FAILURE: Rate(DEFAULT_AUTH_FAILURE_RATE),
});

export interface ApiConfig {
  projectId: string;
  firestoreEmulatorHost?: string;
  pubsubEmulatorHost?: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  port: number;
  host: string;
  version: string;
  maxBodyBytes: number;
  /** The ports a managed proxy may listen on (sorted, distinct); null: any. */
  managedProxyPorts: number[] | null;
  onCloudRun: boolean;
  /** Per-caller rate limit of each route class (middleware/caller-rate-limit.ts). */
  callerRates: CallerRates;
  /** Failed authentications allowed per client address (middleware/auth-failure-limit.ts). */
  authFailureRate: RateSpec;
  auth: AuthConfig;
  /** Discovery and leases (leases/config.ts). */
  leases: LeaseConfig;
  /** The gateway control plane's worker identities and timing (workers/config.ts). */
  workers: WorkersApiConfig;
  /** Where the periodic jobs' Cloud Scheduler is; null: none (local mode without the local scheduler). */
  scheduler: { location: string; emulatorHost?: string } | null;
}

/** Throws zod's error or AuthConfigError; main.ts reports either and exits non-zero. */
export function loadApiConfig(env: Record<string, string | undefined>): ApiConfig {
  const e = ApiEnv.parse(env);
  return {
    projectId: e.GOOGLE_CLOUD_PROJECT,
    firestoreEmulatorHost: e.FIRESTORE_EMULATOR_HOST,
    pubsubEmulatorHost: e.PUBSUB_EMULATOR_HOST,
    logLevel: e.LOG_LEVEL,
    port: e.PORT,
    host: e.HOST,
    version: e.K_REVISION,
    maxBodyBytes: e.MAX_BODY_BYTES,
    managedProxyPorts: e.MANAGED_PROXY_PORTS ?? null,
    onCloudRun: e.K_SERVICE !== undefined,
    callerRates: {
      'lease-acquire': e.RATE_LIMIT_LEASE_ACQUIRE,
      'lease-other': e.RATE_LIMIT_LEASE_OTHER,
      discovery: e.RATE_LIMIT_DISCOVERY,
      'admin-write': e.RATE_LIMIT_ADMIN_WRITE,
      'admin-read': e.RATE_LIMIT_ADMIN_READ,
    },
    authFailureRate: e.RATE_LIMIT_AUTH_FAILURE,
    auth: loadAuthConfig(env),
    leases: loadLeaseConfig(env),
    workers: loadWorkersApiConfig(env),
    scheduler:
      e.SCHEDULER_EMULATOR_HOST || !(env.PROXYPLANE_LOCAL === '1' || e.FIRESTORE_EMULATOR_HOST)
        ? { location: e.REGION, emulatorHost: e.SCHEDULER_EMULATOR_HOST }
        : null,
  };
}
