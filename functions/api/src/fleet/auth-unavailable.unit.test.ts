// A credential that cannot be checked now (Google's signing certificates unreachable) is a 503 with the
// admin guard's Retry-After on the fleet routes too: without it `proxyplane fleet watch` (which retries a
// 503 with a short Retry-After once, as every command does) exited 1 on the first blip.
import { describe, expect, it } from 'vitest';
import type { Authenticator } from '../auth/authenticator.js';
import { harness } from '../testing/harness.js';
import { InMemoryFleetFeed } from './feed.js';

const certsDown: Authenticator = {
  description: 'test',
  authenticate: async () => ({
    ok: false,
    code: 'unavailable',
    reason: 'cannot fetch Google signing certificates',
  }),
};

describe('the fleet routes when the credential cannot be checked', () => {
  it.each([
    ['GET /fleet/api/state with a bearer', '/fleet/api/state', { authorization: 'Bearer eyJ.certs.down' }],
    [
      'GET /fleet/api/state with the cookie',
      '/fleet/api/state',
      { cookie: 'proxyplane_fleet=eyJ.certs.down' },
    ],
    ['the page', '/fleet', { authorization: 'Bearer eyJ.certs.down', accept: 'text/html' }],
  ])('%s: 503 unavailable with Retry-After: 5, as the admin routes', async (_n, path, headers) => {
    const { app } = harness({ fleet: new InMemoryFleetFeed(), auth: certsDown });
    const res = await app.request(path, { headers });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    const admin = await app.request('/v1/proxies', { headers });
    expect(admin.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe(admin.headers.get('retry-after'));
  });

  // The page waits out the Retry-After and reconnects with its cookie: dropping the cookie here sent every
  // signed-in admin to the login form on a short outage of Google's certificates.
  it.each([
    ['GET', '/fleet/api/state', {}],
    ['HEAD', '/fleet/events', {}],
    ['GET', '/fleet', { accept: 'text/html' }],
  ])('%s %s with the cookie: 503, and the cookie is kept', async (method, path, headers) => {
    const { app } = harness({ fleet: new InMemoryFleetFeed(), auth: certsDown });
    const res = await app.request(path, {
      method,
      headers: { cookie: 'proxyplane_fleet=eyJ.certs.down', ...headers },
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('set-cookie')).toBeNull();
  });

  it('JSON names the stable code', async () => {
    const { app } = harness({ fleet: new InMemoryFleetFeed(), auth: certsDown });
    const res = await app.request('/fleet/api/state', { headers: { authorization: 'Bearer eyJ.x.y' } });
    expect(await res.json()).toEqual({
      error: 'unavailable',
      message: 'cannot fetch Google signing certificates',
    });
  });

  it('the login form refused for it says when to try again too', async () => {
    const { app } = harness({ fleet: new InMemoryFleetFeed(), auth: certsDown });
    const res = await app.request('/fleet/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'eyJ.certs.down' }).toString(),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
  });
});
