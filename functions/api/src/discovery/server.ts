// The discovery + lease service on its own: the seed's middleware chain (recover → request log → 64 KiB
// body limit → bearer auth, /healthz exempt) around /healthz, /metrics, /openapi.json and the API.
// The full service (app.ts) mounts the same leaseApi; this composition serves tests, benchmarks and a
// deployment of discovery alone.
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Registry } from 'prom-client';
import { type LeaseApiDeps, leaseApi } from '../leases/index.js';
import { type AuthEnv, crawlerAuth, type NamedToken } from './auth.js';
import { limitBody, notFound, recover, requestLog } from './middleware.js';

export interface DiscoveryServerDeps extends LeaseApiDeps {
  version: string;
  tokens: readonly NamedToken[];
  registry: Registry;
  projectId?: string;
}

export const OPENAPI_INFO = {
  title: 'proxyplane discovery and leases',
  version: '1',
  description: 'Crawlers discover proxies, lease one, report how it did, and release it.',
};

export function createDiscoveryServer(deps: DiscoveryServerDeps) {
  const app = new OpenAPIHono<AuthEnv>();
  app.onError(recover(deps.log));
  app.notFound(notFound);
  app.use('*', requestLog(deps.log, { projectId: deps.projectId }));
  app.use('*', limitBody());
  app.use('*', crawlerAuth({ tokens: deps.tokens, exempt: ['/healthz'] }));
  app.get('/healthz', (c) => c.json({ ok: true, version: deps.version }));
  app.get('/metrics', async (c) =>
    c.text(await deps.registry.metrics(), 200, { 'Content-Type': deps.registry.contentType }),
  );
  app.route('/', leaseApi(deps));
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  app.doc31('/openapi.json', { openapi: '3.1.0', info: OPENAPI_INFO });
  return app;
}
