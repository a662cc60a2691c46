// One place that builds the app with fakes for unit tests: an observed in-memory store, a recording
// publisher, a manual clock, a memory logger and a fixed admin token.
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import { InMemoryProxyStore } from '../../../../shared/src/testing/in-memory-proxy-store.js';
import { ObservedProxyStore } from '../../../../shared/src/testing/observed-proxy-store.js';
import { RecordingReconcilePublisher } from '../../../../shared/src/testing/recording-publisher.js';
import { type ApiDeps, createApp } from '../app.js';
import { anyOf } from '../auth/authenticator.js';
import { staticTokenAuthenticator } from '../auth/static-tokens.js';

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
