// Whose bucket a worker call takes (docs/gateway-control-plane.md § Limits): on GCP every gateway presents
// the one gateway service account, so a bucket keyed by the caller alone is one bucket for the whole fleet.
// The registration behind the limiter is stubbed to fail at once (503): only 429 or not matters here.
import { describe, expect, it, vi } from 'vitest';
import { WorkerStoreError } from '../../../../shared/src/ports/workers.js';
import type { IdTokenVerifier } from '../auth/id-token-verifier.js';
import { workerAuthenticator } from './auth.js';
import { RateLimiter, WORKER_RATES } from './rate-limit.js';
import { type WorkerRoutesDeps, workerRoutes } from './routes.js';

const GATEWAY_SA = 'gateway@p.iam.gserviceaccount.com';
const verifier: IdTokenVerifier = {
  verify: async (token) => ({
    ok: true,
    claims: {
      email: token === 'eu.x.y' ? 'eu@p.iam.gserviceaccount.com' : GATEWAY_SA,
      emailVerified: true,
      audience: 'a',
      subject: 's',
    },
  }),
};

const deps = () =>
  ({
    auth: workerAuthenticator({
      tokens: [],
      serviceAccounts: [
        { email: GATEWAY_SA, pattern: '*' },
        { email: 'eu@p.iam.gserviceaccount.com', pattern: 'gw-eu-*' },
      ],
      verifier,
      open: false,
    }),
    limiter: new RateLimiter(() => 0),
    subscriptions: {
      ensure: async () => {
        throw new WorkerStoreError('unavailable', 'stubbed');
      },
    },
    log: { info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() },
  }) as unknown as WorkerRoutesDeps;

function routes() {
  const app = workerRoutes(deps());
  return async (workerId: string, token = 'all.x.y') => {
    const res = await app.request('/register', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workerId, instanceId: 'i-1', zone: 'z-a', supportedProtocolVersion: 1 }),
    });
    return res.status;
  };
}

const burst = WORKER_RATES.register.burst;

describe('register rate limit', () => {
  it('is per worker even when every gateway presents the same service account', async () => {
    const register = routes();
    for (let i = 0; i < burst; i++) expect(await register('gw-1')).toBe(503);
    expect(await register('gw-1')).toBe(429);
    // Another gateway of the same account is not throttled by gw-1's burst.
    expect(await register('gw-2')).toBe(503);
  });

  it('a caller not allowed the worker id is refused (403) without taking that worker’s bucket', async () => {
    const register = routes();
    for (let i = 0; i < burst + 3; i++) expect(await register('gw-us-1', 'eu.x.y')).toBe(403);
    expect(await register('gw-us-1')).toBe(503);
  });
});

describe('per-worker endpoints', () => {
  it('a caller not allowed the worker id is refused (403) without taking that worker’s bucket', async () => {
    const app = workerRoutes(deps());
    const ack = async (token: string) => {
      const res = await app.request('/gw-us-1/ack', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({}),
      });
      return res.status;
    };
    for (let i = 0; i < WORKER_RATES.ack.burst + 3; i++) expect(await ack('eu.x.y')).toBe(403);
    expect(await ack('all.x.y')).toBe(400); // its own bucket untouched: judged on its (empty) body
  });
});
