// GET /healthz: the liveness answer, open to anyone (no credential: platforms and load balancers poll it).
import { createRoute, z } from '@hono/zod-openapi';
import { json, payloadTooLarge } from './openapi-responses.js';
import { noSecurity } from './openapi-security.js';

const HealthBody = z.object({ ok: z.literal(true), version: z.string() }).openapi('Health');

export const healthRoute = createRoute({
  method: 'get',
  path: '/healthz',
  summary: 'Liveness, and the running version (no credential)',
  security: noSecurity,
  responses: { 200: json(HealthBody, 'Serving'), ...payloadTooLarge },
});
