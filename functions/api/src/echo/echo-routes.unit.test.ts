import { describe, expect, it } from 'vitest';
import { echoRoutes } from './echo-routes.js';

describe('GET /v1/echo', () => {
  it('reflects the peer address and the headers, without credentials', async () => {
    const app = echoRoutes({ trustedHops: 0, remoteAddress: () => '127.0.0.7' });
    const res = await app.request('/v1/echo', {
      headers: { via: '1.1 p', authorization: 'Bearer x', 'proxy-authorization': 'Basic y' },
    });
    const body = (await res.json()) as { ip: string; headers: Record<string, string> };
    expect(body.ip).toBe('127.0.0.7');
    expect(body.headers.via).toBe('1.1 p');
    expect(body.headers.authorization).toBeUndefined();
    expect(body.headers['proxy-authorization']).toBeUndefined();
  });

  it('behind a trusted front end, the exit address is its X-Forwarded-For entry and only the rest is reflected', async () => {
    const app = echoRoutes({ trustedHops: 1, remoteAddress: () => '169.254.1.1' });
    const clean = await app.request('/v1/echo', { headers: { 'x-forwarded-for': '203.0.113.5' } });
    expect(await clean.json()).toMatchObject({ ip: '203.0.113.5', headers: {} });
    const leaky = await app.request('/v1/echo', { headers: { 'x-forwarded-for': '10.0.0.2, 203.0.113.5' } });
    expect(await leaky.json()).toMatchObject({
      ip: '203.0.113.5',
      headers: { 'x-forwarded-for': '10.0.0.2' },
    });
  });
});
