// The probe function's composition root: the concrete adapters behind ProbeHandlerDeps. index.ts
// registers the handler with them; a test builds them against the emulators.
import { setTimeout as sleep } from 'node:timers/promises';
import { Firestore } from '@google-cloud/firestore';
import { dnsResolve } from '../../../shared/src/adapters/dns-resolve.js';
import { FirestoreHealthStore } from '../../../shared/src/adapters/firestore/health-store.js';
import { FirestoreJobRunStore } from '../../../shared/src/adapters/firestore/job-run-store.js';
import { FirestorePassiveFeedStore } from '../../../shared/src/adapters/firestore/passive-feed-store.js';
import { FirestoreProxyStore } from '../../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreRoutingStore } from '../../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { FirestoreOutcomeReader } from '../../../shared/src/adapters/firestore/worker-outcome-store.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { proxyProber } from '../../../shared/src/adapters/probe/proxy-probe.js';
import { createPubSub } from '../../../shared/src/adapters/pubsub/client.js';
import { PubSubPublisher } from '../../../shared/src/adapters/pubsub/publisher.js';
import { PubSubReconcilePublisher } from '../../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { CachedSecretReader } from '../../../shared/src/adapters/secret-manager/cached-reader.js';
import { createSecretManagerClient } from '../../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../../shared/src/adapters/secret-manager/reader.js';
import { firstHoldMs, PublishHolds } from '../../../shared/src/domain/publish-holds.js';
import { type Clock, systemClock } from '../../../shared/src/ports/clock.js';
import type { SecretReader } from '../../../shared/src/ports/secrets.js';
import type { loadProbeConfig } from './config.js';
import { logEgressScope } from './echo-scope.js';
import type { ProbeHandlerDeps } from './handler.js';
import { CREDENTIALS_MISS_DEADLINE_MS, CREDENTIALS_READ_DEADLINE_MS } from './probe-pass.js';
import { logProbeRecorder } from './probe-recorder.js';

/**
 * The probe's credentials cache (docs/health.md § Credentials): a copy for 60 s, served 5 minutes more
 * while Secret Manager fails — and while it does not answer: a read unanswered for
 * CREDENTIALS_READ_DEADLINE_MS counts as failed when that copy can answer, not after the client's retries
 * (up to 600 s); one with no copy after CREDENTIALS_MISS_DEADLINE_MS (and the check's timeout,
 * probe-pass.ts readCredentials). A refusal for good answers for CREDENTIALS_REFUSAL_TTL_MS.
 */
/**
 * How long Secret Manager's refusal of a proxy's credentials (not found, denied, disabled) stands before
 * the probe asks again: one read per secret version a minute, not one per check of every proxy naming it
 * (at 5,000 proxies checked every 30 s, 10,000 billed accesses a minute while a grant was missing). A
 * fixed grant is seen within a minute.
 */
export const CREDENTIALS_REFUSAL_TTL_MS = 60_000;

export function credentialsCache(inner: SecretReader, clock: Clock): CachedSecretReader {
  return new CachedSecretReader(inner, {
    ttlMs: 60_000,
    clock,
    staleIfErrorMs: 300_000,
    readDeadlineMs: CREDENTIALS_READ_DEADLINE_MS,
    missDeadlineMs: CREDENTIALS_MISS_DEADLINE_MS,
    failureTtlMs: CREDENTIALS_REFUSAL_TTL_MS,
  });
}

/**
 * How the checks resolve a proxy's endpoint host that is a DNS name (docs/health.md § How a check dials):
 * c-ares on the event loop with the system's nameservers, each query attempt DNS_ATTEMPT_MS (the
 * second twice that), hosts-file names through a bounded getaddrinfo — not dns.lookup, whose look-ups
 * stuck on one provider's silent nameserver held libuv's four pool threads and failed every other proxy
 * entered by name with DIAL timeout. The check's own deadline bounds each look-up.
 */
export const DNS_ATTEMPT_MS = 2_000;
export const DNS_TRIES = 2;

export function probeResolve() {
  return dnsResolve({ servers: [], timeoutMs: DNS_ATTEMPT_MS, tries: DNS_TRIES });
}

export function probeDeps(config: ReturnType<typeof loadProbeConfig>, log: Logger): ProbeHandlerDeps {
  // Once per process: what EGRESS can see follows from the configuration, not from any tick.
  logEgressScope(config.PROBE_ECHO_URL ?? null, log);
  const db = new Firestore({ projectId: config.GOOGLE_CLOUD_PROJECT });
  const pubsub = new PubSubPublisher(createPubSub(config.GOOGLE_CLOUD_PROJECT, config.PUBSUB_EMULATOR_HOST));
  const secrets = credentialsCache(
    new SecretManagerSecretReader(
      createSecretManagerClient(config.SECRET_MANAGER_EMULATOR_HOST),
      config.GOOGLE_CLOUD_PROJECT,
    ),
    systemClock,
  );
  return {
    proxies: new FirestoreProxyStore(db),
    routing: new FirestoreRoutingStore(db),
    health: new FirestoreHealthStore(db),
    jobs: new FirestoreJobRunStore(db),
    // The deployed timeout, from the table Terraform deploys it from: the run's record is waited for only
    // until shortly before it (handler.ts, boundedRuns).
    timeoutMs: config.timeoutMs,
    // The same publisher as the API's, requeue's, rotation's and reconcile's own: the request carries the
    // `proxy` attribute an operator filters a subscription or the logs by.
    publisher: new PubSubReconcilePublisher(pubsub),
    secrets,
    // Once per process: one c-ares channel for every check (proxy-probe.ts proxyProber).
    prober: proxyProber(probeResolve()),
    log,
    recorder: logProbeRecorder(log),
    tiers: {
      echoUrl: config.PROBE_ECHO_URL ?? null,
      handshakeUrl: config.PROBE_HANDSHAKE_URL ?? null,
      callerIps: config.PROBE_CALLER_IPS,
      rejectUnauthorized: !config.PROBE_TLS_INSECURE,
    },
    concurrency: config.PROBE_CONCURRENCY,
    targetConcurrency: config.PROBE_TARGET_CONCURRENCY,
    // Once per instance, as the requeue sweep's: a first republish after max(5 min, a tick), then longer.
    republished: new PublishHolds(firstHoldMs(config.PROBE_TICK_PERIOD_SECONDS * 1000)),
    passive: {
      outcomes: new FirestoreOutcomeReader(db, { log }),
      feed: new FirestorePassiveFeedStore(db, (m, f) => log.warn(m, f)),
      settings: {
        successThreshold: config.PROBE_PASSIVE_SUCCESS_THRESHOLD,
        failureThreshold: config.PROBE_PASSIVE_FAILURE_THRESHOLD,
        expiryMs: config.PROBE_PASSIVE_EXPIRY_SECONDS * 1000,
        // The expiry counts in ticks, whose starts jitter (passive-track.ts): the passive pass's, at tick
        // starts; the active pass (probe-pass.ts decide) leaves it out, deciding within the run's loop.
        tickPeriodMs: config.PROBE_TICK_PERIOD_SECONDS * 1000,
      },
      rule: {
        minSamples: config.PROBE_PASSIVE_MIN_SAMPLES,
        maxFailureRatio: config.PROBE_PASSIVE_MAX_FAILURE_RATIO,
      },
      settleMs: config.PROBE_PASSIVE_SETTLE_SECONDS * 1000,
    },
    clock: systemClock,
    sleep: (ms) => sleep(ms),
    tickPeriodMs: config.PROBE_TICK_PERIOD_SECONDS * 1000,
    loopMs: config.PROBE_LOOP_SECONDS * 1000,
    runBudgetMs: config.PROBE_RUN_BUDGET_SECONDS * 1000,
  };
}
