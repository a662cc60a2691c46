// The one place the API's concrete adapters are built (Firestore, Pub/Sub, the Google token verifier),
// from a loaded config. main.ts calls it; end-to-end tests may too, or build ApiDeps from their own parts.
import { Firestore } from '@google-cloud/firestore';
import { Registry } from 'prom-client';
import { FirestoreJobRunStore } from '../../../shared/src/adapters/firestore/job-run-store.js';
import { countProxiesByPhase } from '../../../shared/src/adapters/firestore/proxy-phase-counts.js';
import { FirestoreProxyStore } from '../../../shared/src/adapters/firestore/proxy-store.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { createPubSub } from '../../../shared/src/adapters/pubsub/client.js';
import { PubSubPublisher } from '../../../shared/src/adapters/pubsub/publisher.js';

import { PubSubReconcilePublisher } from '../../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { createCloudSchedulerClient } from '../../../shared/src/adapters/scheduler/client.js';
import { CloudSchedulerJobs } from '../../../shared/src/adapters/scheduler/cloud-scheduler-jobs.js';
import { controllableJobIds } from '../../../shared/src/adapters/scheduler/job-names.js';
import { createSecretManagerClient } from '../../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../../shared/src/adapters/secret-manager/reader.js';

import { loadScheduleTable } from '../../../shared/src/config/topology.js';
import { systemClock } from '../../../shared/src/ports/clock.js';
import type { ApiDeps } from './app.js';
import { buildAuthenticator } from './auth/config.js';
import { API_PUBLISH_DEADLINE_MS, type ApiConfig } from './config.js';
import { FirestoreFleetFeed } from './fleet/firestore-feed.js';
import { promProxyPhaseGauge } from './fleet/phase-gauge.js';
import { buildLeaseApi } from './leases/wiring.js';
import { promRateLimitRefusals } from './middleware/rate-limit-metrics.js';
import { buildWorkersApi } from './workers/wiring.js';

/**
 * How long one proxy-store call (a read, a list, a write, the read that checks whether a given-up write
 * landed) may go unanswered before the API gives it up and answers 503 unavailable with Retry-After. The
 * Firestore client allows reads and queries 300 s per attempt, as long as Cloud Run's request timeout
 * (terraform/run.tf): a stalled Firestore held the request into Cloud Run's plain-text 504, its handler
 * running on past the cut. A healthy call takes milliseconds; 10 s leaves a stalled request's answer —
 * 20 s for a write, whose mark is then checked — inside the CLI's 30 s per request, far inside Cloud Run's.
 */
const API_STORE_CALL_DEADLINE_MS = 10_000;

/**
 * The bound of the one call that reads the whole collection: the unpaged `GET /v1/proxies` (listAll). Its
 * query streams every matching document, so a large fleet's list can take longer than 10 s of a healthy
 * Firestore, and at API_STORE_CALL_DEADLINE_MS it would answer 503 every time. 25 s still answers a
 * stalled list inside the CLI's 30 s per request (CLI_REQUEST_TIMEOUT_MS, cli/http.ts). Paged listings
 * (listPage, what the CLI sends) read one page and keep API_STORE_CALL_DEADLINE_MS.
 */
const API_STORE_LIST_ALL_DEADLINE_MS = 25_000;

export interface Wired {
  deps: ApiDeps;
  /** Closes the clients (graceful shutdown). */
  close(): Promise<void>;
}

export function wireApi(config: ApiConfig, log: Logger): Wired {
  const firestore = new Firestore({
    projectId: config.projectId,
    ...(config.firestoreEmulatorHost ? { host: config.firestoreEmulatorHost, ssl: false } : {}),
  });
  const pubsub = createPubSub(config.projectId, config.pubsubEmulatorHost);
  const secretManager = createSecretManagerClient(config.leases.secretManagerEmulatorHost);
  const registry = new Registry();
  promProxyPhaseGauge(registry, () => countProxiesByPhase(firestore), {
    maxAgeMs: 10_000,
    // The count's reuse interval is an age, monotonic: on the wall clock, one stepped back an hour froze
    // proxyplane_proxies{phase} for that hour.
    nowMs: () => performance.now(),
    onError: (error) => log.warn('counting proxies by phase for /metrics failed', { error }),
  });
  const leases = buildLeaseApi({
    firestore,
    secrets: new SecretManagerSecretReader(secretManager, config.projectId),
    clock: systemClock,
    // The credentials quarantine's and the active-lease count's clock, monotonic as the rate limiters'
    // below: not stepped with the wall's.
    monotonicNow: () => performance.now(),
    registry,
    log,
    config: config.leases,
  });
  const auth = buildAuthenticator(config.auth);
  const fleet = new FirestoreFleetFeed(firestore, log, systemClock);
  const scheduler = config.scheduler
    ? new CloudSchedulerJobs({
        projectId: config.projectId,
        location: config.scheduler.location,
        jobIds: controllableJobIds(loadScheduleTable()),
        client: createCloudSchedulerClient(config.scheduler.emulatorHost),
      })
    : null;
  const refusals = promRateLimitRefusals(registry);
  // Cloud Run's front end appends the client's address to X-Forwarded-For; elsewhere nothing trusted
  // forwards, and the socket's peer is the client (middleware/client-address.ts). A load balancer put in
  // front of the service would append entries of its own: this must then count them too (docs/api.md
  // § Failed authentication), or every client shares the balancer's address.
  const trustedHops = config.onCloudRun ? 1 : 0;
  const deps: ApiDeps = {
    version: config.version,
    store: new FirestoreProxyStore(firestore, {
      callDeadlineMs: API_STORE_CALL_DEADLINE_MS,
      listAllDeadlineMs: API_STORE_LIST_ALL_DEADLINE_MS,
    }),
    publisher: new PubSubReconcilePublisher(
      new PubSubPublisher(pubsub, { deadlineMs: API_PUBLISH_DEADLINE_MS }),
    ),
    clock: systemClock,
    auth,
    log,
    maxBodyBytes: config.maxBodyBytes,
    managedProxyPorts: config.managedProxyPorts,
    echo: { trustedHops },
    leases,
    workers: buildWorkersApi({
      firestore,
      pubsub,
      projectId: config.projectId,
      config: config.workers,
      adminAuth: auth,
      clock: systemClock,
      log,
    }),
    fleet,
    // Cloud Run's request log keeps whole URLs: no token in the fleet page's address there.
    fleetTokenInUrl: !config.onCloudRun,
    jobs: { scheduler, runs: new FirestoreJobRunStore(firestore) },
    callerLimit: {
      rates: config.callerRates,
      now: () => performance.now(),
      refused: refusals,
    },
    authFailureLimit: {
      rate: config.authFailureRate,
      now: () => performance.now(),
      trustedHops,
      refused: () => refusals('auth-failure'),
      log,
    },
  };
  return {
    deps,
    close: async () => {
      await Promise.all([leases.stop(), fleet.stop()]);
      await Promise.allSettled([
        firestore.terminate(),
        pubsub.close(),
        secretManager.close(),
        scheduler?.close(),
      ]);
    },
  };
}
