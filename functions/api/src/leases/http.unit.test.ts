// A lease body that is valid JSON but fails the schema is 400 invalid_request, and its message says what
// was invalid in the words the admin routes use ("invalid request body"), never "invalid json": that
// reads as the other code, invalid_json, and sends a crawler's author looking for a syntax error.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { LeaseStoreError } from '../../../../shared/src/ports/lease-store.js';
import { missingContractFields } from '../../../../shared/src/testing/log-contract.js';
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

describe('lease routes: a lease store that fails is counted and logged, for every operation', () => {
  const id = '0123456789abcdef0123456789abcdef';
  const down = async () => {
    const firestore = Object.assign(new Error('14 UNAVAILABLE: no connection'), { code: 14 });
    throw new LeaseStoreError('unavailable', 'committing lease state of p1', { cause: firestore });
  };
  const service = { acquire: down, renew: down, release: down, report: down } as unknown as LeaseService;
  const unavailableLines = (log: ReturnType<typeof memoryLogger>) =>
    log.lines.filter((l) => l.event === 'leases.store_unavailable');

  it.each([
    ['acquire', 'POST', '/v1/leases', '{"selector":{}}'],
    ['renew', 'POST', `/v1/leases/${id}/renew`, '{}'],
    ['release', 'DELETE', `/v1/leases/${id}`, undefined],
    ['report', 'POST', `/v1/leases/${id}/report`, '{"result":"ok"}'],
  ])(
    '%s: 503 unavailable, proxyplane_lease_requests_total{outcome="unavailable"} and one leases.store_unavailable line',
    async (op, method, path, body) => {
      const seen: Array<[string, string]> = [];
      const log = memoryLogger();
      const routes = createLeaseRoutes({
        service,
        metrics: { leaseRequest: (o, outcome) => void seen.push([o, outcome]) },
        log,
      });
      const res = await routes.request(path, {
        method,
        ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body }),
      });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toBe('unavailable');
      expect(seen).toEqual([[op, 'unavailable']]);
      // The line the lease-store alert counts (terraform/monitoring.tf): its contract's fields, at WARNING.
      const lines = unavailableLines(log);
      expect(lines).toHaveLength(1);
      expect(lines.map(missingContractFields)).toEqual([[]]);
      expect(lines[0]).toMatchObject({ severity: 'WARNING', op, reason: 'unavailable', code: 14 });
    },
  );

  it('names the reason: contention that outlasted the retries, a replica still loading', async () => {
    const log = memoryLogger();
    const failWith = (kind: LeaseStoreError['kind']) => async () => {
      throw new LeaseStoreError(kind, 'no commit on p1 after 5 attempts');
    };
    const routes = createLeaseRoutes({
      service: { acquire: failWith('contended'), release: failWith('not_ready') } as unknown as LeaseService,
      metrics: noLeaseMetrics,
      log,
    });
    const acquired = await routes.request('/v1/leases', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"selector":{}}',
    });
    const released = await routes.request(`/v1/leases/${id}`, { method: 'DELETE' });
    expect([acquired.status, released.status]).toEqual([503, 503]);
    const lines = unavailableLines(log);
    expect(lines.map((l) => [l.op, l.reason, l.code])).toEqual([
      ['acquire', 'contended', null],
      ['release', 'not_ready', null],
    ]);
    // Only the operation and the store's reason: not the lease's id (the path carries it).
    for (const l of lines) expect(JSON.stringify(l)).not.toContain(id);
  });

  it('a 503 that is not the store (credentials unreadable) is not a lease-store line', async () => {
    const log = memoryLogger();
    const routes = createLeaseRoutes({
      service: {
        acquire: async () => ({ kind: 'credentials_unavailable' }),
      } as unknown as LeaseService,
      metrics: noLeaseMetrics,
      log,
    });
    const res = await routes.request('/v1/leases', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"selector":{}}',
    });
    expect(res.status).toBe(503);
    expect(unavailableLines(log)).toEqual([]);
  });
});
