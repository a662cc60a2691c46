// Builds the lease API's adapters — called from the API's wiring.ts, the one place adapters are built.
// The caller owns the Firestore client and the raw SecretReader; stop() ends the listeners.
import type { Firestore } from '@google-cloud/firestore';
import type { Registry } from 'prom-client';
import { FirestoreLeaseStore } from '../../../../shared/src/adapters/firestore/lease-store.js';
import { FirestoreOwnershipGate } from '../../../../shared/src/adapters/firestore/ownership-gate.js';
import { FirestoreProxyCatalog } from '../../../../shared/src/adapters/firestore/proxy-cache.js';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { CachedSecretReader } from '../../../../shared/src/adapters/secret-manager/cached-reader.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { SecretReader } from '../../../../shared/src/ports/secrets.js';
import { discoveryView } from '../discovery/list.js';
import type { LeaseConfig } from './config.js';
import type { LeaseApiDeps } from './index.js';
import { promLeaseMetrics } from './metrics.js';
import { LeaseService } from './service.js';

export interface LeaseApiRuntime extends LeaseApiDeps {
  /** The gateway's side as the service sees it (tests break its view as a failing listener does). */
  gate: FirestoreOwnershipGate;
  stop(): Promise<void>;
}

/**
 * How long an acquire waits for a proxy's credentials from Secret Manager (which answers in well under
 * 100 ms): past it, the last value read answers (up to ten minutes past its TTL), or the grant is given
 * back and the proxy set aside for a while, as for any unreadable credentials.
 */
export const CREDENTIALS_READ_DEADLINE_MS = 5_000;

export function buildLeaseApi(opts: {
  firestore: Firestore;
  secrets: SecretReader;
  clock: Clock;
  /**
   * Milliseconds on a monotonic clock (the API's wiring passes performance.now) for what is timed here as
   * an age, in-process: the credentials quarantine (LeaseServiceDeps.monotonicNow), the reuse interval
   * of proxyplane_leases_active's count, and the lease store's own ages (its view's freshness, its retries
   * of the start-up read: FirestoreLeaseStoreOptions.monotonicNow). Required, no default: `clock` is the
   * wall clock in production, and one stepped back an hour kept a quarantine (and the gauge) stuck for
   * that hour.
   */
  monotonicNow: () => number;
  registry: Registry;
  log: Logger;
  config: LeaseConfig;
  /** Default CREDENTIALS_READ_DEADLINE_MS; tests whose secret reads stand for slow work raise it. */
  credentialsReadDeadlineMs?: number;
  /** Default CANDIDATE_LIMIT (service.ts); tests set it low to reach the plan of every candidate. */
  candidateLimit?: number;
}): LeaseApiRuntime {
  const { firestore, clock, config, registry } = opts;
  const log = opts.log.child({ component: 'leases' });
  if (config.tokens.length === 0) {
    log.warn('DISCOVERY_TOKENS is unset: discovery and leases accept admin credentials only');
  }
  const settings = { cooldownWindowMs: config.cooldownWindowMs };
  const catalog = new FirestoreProxyCatalog(firestore, { log }).start();
  const store = new FirestoreLeaseStore(firestore, {
    clock,
    monotonicNow: opts.monotonicNow,
    settings,
    log,
  }).start();
  // The gateway's ownership and reclaims: LeaseService.ready() waits for it, and it fails closed meanwhile.
  const gate = new FirestoreOwnershipGate(firestore, clock, { log }).start();
  // Stale-if-error: a Secret Manager blip must not stop leases of proxies whose credentials we just had —
  // nor hold them: a read unanswered for CREDENTIALS_READ_DEADLINE_MS counts as failed.
  const secrets = new CachedSecretReader(opts.secrets, {
    ttlMs: config.credentialsCacheMs,
    clock,
    staleIfErrorMs: 10 * 60_000,
    readDeadlineMs: opts.credentialsReadDeadlineMs ?? CREDENTIALS_READ_DEADLINE_MS,
  });
  const service = new LeaseService({
    catalog,
    store,
    secrets,
    gate,
    clock,
    monotonicNow: opts.monotonicNow,
    settings,
    log,
    ...(opts.candidateLimit !== undefined && { candidateLimit: opts.candidateLimit }),
  });
  const metrics = promLeaseMetrics(registry, () => store.countActive(), {
    // The count's reuse interval is an age: on the wall clock, one stepped back froze the gauge for the step.
    nowMs: opts.monotonicNow,
    onError: (error) => log.warn('counting active leases for /metrics failed', { error }),
  });
  return {
    service,
    catalog,
    store,
    gate,
    clock,
    log,
    registry,
    tokens: config.tokens,
    metrics,
    discovery: discoveryView({ store, gate, clock, ready: () => service.ready(), metrics, log }),
    async stop() {
      catalog.stop();
      gate.stop();
      await store.stop();
    },
  };
}
