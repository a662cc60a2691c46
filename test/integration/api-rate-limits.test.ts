// The per-caller rate limit (functions/api/src/middleware/caller-rate-limit.ts) on the real API app over the
// Firestore emulator: a crawler token looping on acquire is refused 429 rate_limited with Retry-After once
// its burst is spent — the refused acquire stores no lease, though capacity was there — while the admin
// token, another caller, still acquires and reads; /metrics counts the refusal by class.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import {
  type CallerClass,
  DEFAULT_CALLER_RATES,
} from '../../functions/api/src/middleware/caller-rate-limit.js';
import { promRateLimitRefusals } from '../../functions/api/src/middleware/rate-limit-metrics.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { SecretReader } from '../../shared/src/ports/secrets.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { ADMIN_TOKEN, leaseTestApp, proxy, storedLeases, writeFleet } from '../support/leases.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const CRAWLER = 'crawler-token-rate-0123456789';
const secrets: SecretReader = {
  access: async () => {
    throw new Error('no secrets here');
  },
};

let api: LeaseApiRuntime | undefined;
beforeEach(async () => {
  await clearProject(projectId);
});
afterEach(async () => {
  await api?.stop();
  api = undefined;
});
afterAll(async () => {
  await db.terminate();
});

describe('per-caller rate limits on the lease routes', () => {
  it('refuses a crawler over its acquire burst 429 with Retry-After, changing nothing; the admin still works', async () => {
    await writeFleet(db, [proxy('eu-1', { attributes: { region: 'eu' }, capacity: 10, external: true })]);
    let nowMs = 0;
    let refused: (cls: CallerClass) => void = () => {};
    const built = leaseTestApp({
      firestore: new Firestore({ projectId }),
      clock: new ManualClock(new Date('2026-03-01T00:00:00Z')),
      secrets,
      lease: { tokens: [{ name: 'fleet', token: CRAWLER }] },
      extra: {
        callerLimit: {
          rates: { ...DEFAULT_CALLER_RATES, 'lease-acquire': { perSecond: 1, burst: 2 } },
          now: () => nowMs,
          refused: (cls) => refused(cls),
        },
      },
    });
    api = built.leases;
    refused = promRateLimitRefusals(built.registry);
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const res = await built.app.request(path, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text };
    };
    const acquire = (token: string) => call('POST', '/v1/leases', token, { selector: { region: 'eu' } });

    expect((await acquire(CRAWLER)).status).toBe(201);
    expect((await acquire(CRAWLER)).status).toBe(201);
    const before = await storedLeases(db);
    expect(before).toHaveLength(2);

    const refusedCall = await acquire(CRAWLER);
    expect(refusedCall.status).toBe(429);
    expect(refusedCall.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(refusedCall.text)).toEqual({
      error: 'rate_limited',
      message: 'too many lease-acquire requests from this caller; retry after 1 s',
    });
    expect(await storedLeases(db)).toEqual(before);

    // Another caller is untouched, and the crawler's other classes too.
    expect((await call('GET', '/v1/proxies', CRAWLER)).status).toBe(200);
    expect((await acquire(ADMIN_TOKEN)).status).toBe(201);
    expect((await call('GET', '/v1/proxies/eu-1', ADMIN_TOKEN)).status).toBe(200);
    expect(await storedLeases(db)).toHaveLength(3);

    const metrics = await call('GET', '/metrics', ADMIN_TOKEN);
    expect(metrics.text).toContain('proxyplane_rate_limited_total{class="lease-acquire"} 1');
    expect(metrics.text).toContain('proxyplane_rate_limited_total{class="admin-write"} 0');

    // A second later the bucket holds a token again.
    nowMs += 1000;
    expect((await acquire(CRAWLER)).status).toBe(201);
    expect(await storedLeases(db)).toHaveLength(4);
  });
});
