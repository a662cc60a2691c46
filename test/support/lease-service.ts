// The discovery + lease service as a real process, for tests and `npm run bench -- leases`:
//   PORT=0 FIRESTORE_EMULATOR_HOST=… GOOGLE_CLOUD_PROJECT=… node --import tsx test/support/lease-service.ts
// Prints one JSON line {"listening": port} on stdout once it serves. Secrets come from LEASE_TEST_SECRETS
// (JSON {"secret-id": "user:pass"}) until the Secret Manager adapter is on main.
// TODO(adminapi): run functions/api/src/main.ts instead once it wires the lease API from the environment.
import { Firestore } from '@google-cloud/firestore';
import { serve } from '@hono/node-server';
import { Registry } from 'prom-client';
import { jsonLogger } from '../../functions/api/src/discovery/log.js';
import { createDiscoveryServer } from '../../functions/api/src/discovery/server.js';
import { loadLeaseConfig } from '../../functions/api/src/leases/config.js';
import type { SecretReader } from '../../functions/api/src/leases/credentials.js';
import { buildLeaseApi } from '../../functions/api/src/leases/wiring.js';
import { systemClock } from '../../shared/src/ports/clock.js';

const env = process.env;
const log = jsonLogger((env.LOG_LEVEL as 'info' | undefined) ?? 'info', (line) => process.stderr.write(line));
const secretValues: Record<string, string> = JSON.parse(env.LEASE_TEST_SECRETS ?? '{}');
const secrets: SecretReader = {
  async access(ref) {
    const value = secretValues[ref.secret];
    if (value === undefined) throw Object.assign(new Error(`secret ${ref.secret} not found`), { code: 5 });
    return value;
  },
};
const projectId = env.GOOGLE_CLOUD_PROJECT ?? 'demo-proxyplane';
const firestore = new Firestore({ projectId });
const registry = new Registry();
const config = loadLeaseConfig(env);
const api = buildLeaseApi({
  firestore,
  secrets,
  clock: systemClock,
  registry,
  log,
  config,
});
const app = createDiscoveryServer({
  ...api,
  version: 'test',
  tokens: config.tokens,
  registry,
  projectId,
});
const server = serve({ fetch: app.fetch, port: Number(env.PORT ?? 0), hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(`${JSON.stringify({ listening: info.port })}\n`);
});
const shutdown = () => {
  server.close();
  void api
    .stop()
    .then(() => firestore.terminate())
    .finally(() => process.exit(0));
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
