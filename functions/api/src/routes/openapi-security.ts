// The credentials the service's guards accept, as OpenAPI security schemes, and the requirement of each
// surface. All three are bearer tokens (`Authorization: Bearer …`): the schemes name which ones a route
// takes (docs/api.md § Authentication, docs/leases.md, docs/gateway-control-plane.md). The fleet page's cookie,
// the one credential that is not a bearer token, is its own scheme, registered by the page (fleet-openapi.ts).
import type { OpenAPIHono } from '@hono/zod-openapi';

/** One way to be let in: each named scheme with the scopes it needs (none: these are bearer tokens). */
type Requirements = Array<Record<string, string[]>>;

/** Admin routes: /v1/proxies writes and reads by name, /v1/jobs, /v1/gateway (the document's default). */
export const adminSecurity: Requirements = [{ admin: [] }];
/** Discovery (GET /v1/proxies) and the lease routes: a crawler token, or any admin credential. */
export const crawlerSecurity: Requirements = [{ crawler: [] }, { admin: [] }];
/** /v1/workers: the gateway workers' own identities. */
export const workerSecurity: Requirements = [{ worker: [] }];
/** /healthz and /v1/echo: no credential. */
export const noSecurity: Requirements = [];

export function registerSecuritySchemes(registry: OpenAPIHono['openAPIRegistry']): void {
  registry.registerComponent('securitySchemes', 'admin', {
    type: 'http',
    scheme: 'bearer',
    description:
      'An admin credential: a Google identity token of an allow-listed principal (ADMIN_PRINCIPALS, ADMIN_EMAILS; audience ADMIN_AUDIENCES) or a named admin token (ADMIN_TOKENS). A crawler token on an admin-only route is 403 forbidden.',
  });
  registry.registerComponent('securitySchemes', 'crawler', {
    type: 'http',
    scheme: 'bearer',
    description:
      'A crawler token (DISCOVERY_TOKENS): opens discovery (GET /v1/proxies), the lease routes, /metrics and /openapi.json, nothing else.',
  });
  registry.registerComponent('securitySchemes', 'worker', {
    type: 'http',
    scheme: 'bearer',
    description:
      'A gateway worker identity: a Google identity token of a GATEWAY_SERVICE_ACCOUNT (audience WORKER_AUDIENCES), or a worker token (WORKER_TOKENS), each authorised for some worker ids only.',
  });
}
