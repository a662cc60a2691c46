// A lease body that is valid JSON but fails the schema is 400 invalid_request, and its message says what
// was invalid in the words the admin routes use ("invalid request body"), never "invalid json": that
// reads as the other code, invalid_json, and sends a crawler's author looking for a syntax error.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { LeaseStoreError } from '../../../../shared/src/ports/lease-store.js';
import { noLeaseMetrics } from './metrics.js';
import { createLeaseRoutes } from './routes.js';
import type { LeaseService } from './service.js';

// Validation answers before the service is reached: a service that is never called is enough.
const app = createLeaseRoutes({ service: {} as LeaseService, metrics: noLeaseMetrics, log: memoryLogger() });

const post = (path: string, body: string) =>
  app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

describe('lease routes: the message of a validation failure', () => {
  it.each([
    ['/v1/leases', '{"selector":{"country":"de"},"ttl":300}', 'ttl'],
    ['/v1/leases', '{"selector":"country=de"}', 'selector'],
    ['/v1/leases/0123456789abcdef0123456789abcdef/renew', '{"ttlSeconds":1}', 'ttlSeconds'],
  ])('POST %s %s → invalid_request, "invalid request body", at %s', async (path, body, at) => {
    const res = await post(path, body);
    expect(res.status).toBe(400);
    const answer = (await res.json()) as { error: string; message: string; issues: { path: string }[] };
    expect(answer).toMatchObject({ error: 'invalid_request', message: 'invalid request body' });
    expect(answer.issues.map((i) => i.path)).toContain(at);
  });

  it('keeps invalid_result and its own message for a report whose result is not one of the three', async () => {
    const res = await post('/v1/leases/0123456789abcdef0123456789abcdef/report', '{"result":"great"}');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: 'invalid_result',
      message: 'result must be ok, rate_limited or banned',
    });
  });
});

describe('lease routes: a lease store that fails is counted, for every operation', () => {
  const id = '0123456789abcdef0123456789abcdef';
  const down = async () => {
    throw new LeaseStoreError('unavailable', 'Firestore code 14');
  };
  const service = { acquire: down, renew: down, release: down, report: down } as unknown as LeaseService;

  it.each([
    ['acquire', 'POST', '/v1/leases', '{"selector":{}}'],
    ['renew', 'POST', `/v1/leases/${id}/renew`, '{}'],
    ['release', 'DELETE', `/v1/leases/${id}`, undefined],
    ['report', 'POST', `/v1/leases/${id}/report`, '{"result":"ok"}'],
  ])(
    '%s: 503 unavailable, and proxyplane_lease_requests_total{outcome="unavailable"}',
    async (op, method, path, body) => {
      const seen: Array<[string, string]> = [];
      const routes = createLeaseRoutes({
        service,
        metrics: { leaseRequest: (o, outcome) => void seen.push([o, outcome]) },
        log: memoryLogger(),
      });
      const res = await routes.request(path, {
        method,
        ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body }),
      });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toBe('unavailable');
      expect(seen).toEqual([[op, 'unavailable']]);
    },
  );
});
