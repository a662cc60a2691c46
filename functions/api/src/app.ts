// The Hono service: admin API, discovery and leases, worker endpoints. Built from plain parameters
// (createApp(deps)) so tests drive it with app.request() and no server.
import { OpenAPIHono } from '@hono/zod-openapi';

export interface ApiDeps {
  /** Reported by /healthz. */
  version: string;
}

export function createApp(deps: ApiDeps) {
  const app = new OpenAPIHono();
  app.get('/healthz', (c) => c.json({ ok: true, version: deps.version }));
  return app;
}
