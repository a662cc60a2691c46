// One place that builds the app with fakes for unit tests: an observed in-memory store, a recording
// publisher, a manual clock, a memory logger and a fixed admin token.

import { Registry } from 'prom-client';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import { InMemoryProxyStore } from '../../../../shared/src/testing/in-memory-proxy-store.js';
import { ObservedProxyStore } from '../../../../shared/src/testing/observed-proxy-store.js';
import { RecordingReconcilePublisher } from '../../../../shared/src/testing/recording-publisher.js';
import { type ApiDeps, createApp } from '../app.js';
import { anyOf } from '../auth/authenticator.js';
import { staticTokenAuthenticator } from '../auth/static-tokens.js';
import { InMemoryFleetFeed } from '../fleet/feed.js';
import { InMemoryJobRuns, InMemoryJobScheduler } from '../jobs/testing/in-memory-jobs.js';
import type { LeaseApiDeps } from '../leases/index.js';
import type { WorkersApiDeps } from '../workers/index.js';

export const ADMIN_TOKEN = 'unit-test-admin-token-0123456789';

export function harness(overrides: Partial<ApiDeps> = {}) {
  const store = new ObservedProxyStore(new InMemoryProxyStore());
  const publisher = new RecordingReconcilePublisher();
  const clock = new ManualClock(new Date('2026-02-01T12:00:00Z'));
  const log = memoryLogger();
  let uids = 0;
  const deps: ApiDeps = {
    version: 'test',
    store,
    publisher,
    clock,
    log,
    auth: anyOf([staticTokenAuthenticator([{ name: 'unit', token: ADMIN_TOKEN }])]),
    newUid: () => `00000000-0000-4000-8000-${String(++uids).padStart(12, '0')}`,
    ...overrides,
  };
  const app = createApp(deps);
  const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };

  /** A JSON request with the admin token (override headers to drop or change it). */
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    app.request(path, {
      method,
      headers: {
        ...auth,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });

  return { app, deps, store, publisher, clock, log, call, auth };
}

/**
 * The app with every optional surface mounted, for tests of its route table and /openapi.json: the
 * dependencies behind the routes are never called.
 */
export function everySurface(overrides: Partial<ApiDeps> = {}) {
  const unused = {} as never;
  return harness({
    echo: { trustedHops: 0 },
    leases: {
      service: unused,
      catalog: unused,
      store: unused,
      clock: unused,
      metrics: unused,
      discovery: unused,
      log: unused,
      tokens: [{ name: 'crawler', token: 'crawler-token-0123456789abcdef' }],
      registry: new Registry(),
    } satisfies LeaseApiDeps,
    workers: { log: unused, auth: unused, adminAuth: unused, limiter: unused } as unknown as WorkersApiDeps,
    fleet: new InMemoryFleetFeed(),
    jobs: {
      scheduler: new InMemoryJobScheduler(['gc-sweep'], () => new Date(0)),
      runs: new InMemoryJobRuns(),
    },
    ...overrides,
  });
}
