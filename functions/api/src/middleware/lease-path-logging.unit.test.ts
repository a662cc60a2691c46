// A lease id is the lease (docs/leases.md § Known limits): no line the API logs carries it whole — not the
// request line, nor the error net's line for a request that failed.
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { ApiError } from '../errors.js';
import { recover } from './recover.js';
import { loggedPath, requestLog } from './request-log.js';

const ID = 'l_6f1c2d9e8b7a4c3d2e1f0a9b8c7d6e5f';

describe('lease ids in the API’s log lines', () => {
  it('are replaced by a digest of 12 hex, the same for the same id; other paths stay as they are', () => {
    const digest = loggedPath(`/v1/leases/${ID}`).split('/')[3];
    expect(digest).toMatch(/^lease-[0-9a-f]{12}$/);
    expect(loggedPath(`/v1/leases/${ID}/renew`)).toBe(`/v1/leases/${digest}/renew`);
    expect(loggedPath('/v1/leases/other/report')).not.toContain(digest);
    for (const path of ['/v1/leases', '/v1/proxies/p1', '/v1/workers/gw-1/ack', '/healthz'])
      expect(loggedPath(path)).toBe(path);
  });

  it.each([
    ['a doubled leading slash (a base URL ending in /)', `//v1/leases/${ID}/renew`],
    ['another case', `/V1/Leases/${ID}/renew`],
    ['doubled slashes after leases', `/v1/leases//${ID}`],
    ['an encoded slash', `/v1/leases%2F${ID}/renew`],
  ])('are digested in a path that no route matches: %s', async (_, path) => {
    expect(loggedPath(path)).not.toContain(ID);
    expect(loggedPath(path)).toMatch(/lease-[0-9a-f]{12}/);
    // End to end: the request line of the 404 carries the digest only.
    const log = memoryLogger();
    const app = new Hono();
    app.use(requestLog({ log }));
    app.post('/v1/leases/:id/renew', (c) => c.body(null, 204));
    const res = await app.request(`http://x${path}`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(log.lines).toHaveLength(1);
    expect(JSON.stringify(log.lines)).not.toContain(ID);
  });

  it.each([
    ['an unexpected throw', () => new Error('boom')],
    ['a 5xx ApiError', () => new ApiError(503, 'unavailable', 'store down')],
  ])('%s on a lease route: the error line names the digest, not the id', async (_, thrown) => {
    const log = memoryLogger();
    const app = new Hono();
    app.use(requestLog({ log }));
    app.onError(recover({ log }));
    app.post('/v1/leases/:id/renew', () => {
      throw thrown();
    });
    const res = await app.request(`/v1/leases/${ID}/renew`, { method: 'POST' });
    expect(res.status).toBeGreaterThanOrEqual(500);
    // The error net's line and the request line, both at ERROR (a 5xx).
    expect(log.lines.filter((l) => l.severity === 'ERROR')).toHaveLength(2);
    expect(JSON.stringify(log.lines)).not.toContain(ID);
    expect(JSON.stringify(log.lines)).toContain(loggedPath(`/v1/leases/${ID}/renew`));
  });
});
