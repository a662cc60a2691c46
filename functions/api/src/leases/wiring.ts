// Builds the lease service's adapters — the one place they are constructed. Entry points call
// buildLeaseApi with their Firestore client, SecretReader, Clock and metrics registry, then mount
// leaseApi(api) and call api.stop() on shutdown.
import type { Firestore } from '@google-cloud/firestore';
import type { Registry } from 'prom-client';
import { FirestoreLeaseStore } from '../../../../shared/src/adapters/firestore/lease-store.js';
import { FirestoreProxyCatalog } from '../../../../shared/src/adapters/firestore/proxy-cache.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { StructuredLog } from '../discovery/log.js';
import type { LeaseConfig } from './config.js';
import { CredentialCache, type SecretReader } from './credentials.js';
import type { LeaseApiDeps } from './index.js';
import { promLeaseMetrics } from './metrics.js';
import { LeaseService } from './service.js';

export interface LeaseApiRuntime extends LeaseApiDeps {
  stop(): Promise<void>;
}

export function buildLeaseApi(opts: {
  firestore: Firestore;
  secrets: SecretReader;
  clock: Clock;
  registry: Registry;
  log: StructuredLog;
  config: LeaseConfig;
}): LeaseApiRuntime {
  const { firestore, clock, log, config } = opts;
  if (config.authDisabled) {
    log(
      'WARNING',
      '!!! DISCOVERY_TOKENS is empty: discovery and lease routes are OPEN to anyone (local mode only) !!!',
    );
  }
  const settings = { cooldownWindowMs: config.cooldownWindowMs };
  const catalog = new FirestoreProxyCatalog(firestore, { log }).start();
  const store = new FirestoreLeaseStore(firestore, { clock, settings, log }).start();
  const credentials = new CredentialCache(opts.secrets, clock, config.credentialsCacheMs);
  const service = new LeaseService({ catalog, store, credentials, clock, settings, log });
  const metrics = promLeaseMetrics(opts.registry, () => store.totalActive(clock.now()));
  return {
    service,
    catalog,
    store,
    clock,
    metrics,
    log,
    async stop() {
      catalog.stop();
      await store.stop();
    },
  };
}
