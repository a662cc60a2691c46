// The API as main.ts composes it (loadApiConfig → wireApi) on the emulators: the scrape-time counts of its
// /metrics (proxyplane_proxies{phase}, proxyplane_leases_active; reused-read.ts) are reused for an interval
// timed on the monotonic clock. On the wall clock, one stepped back an hour (NTP, a VM resumed) froze both
// gauges for that hour: every scrape reused the count from before the step.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadApiConfig } from '../../functions/api/src/config.js';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { type Wired, wireApi } from '../../functions/api/src/wiring.js';
import { countProxiesByPhase } from '../../shared/src/adapters/firestore/proxy-phase-counts.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { releaseProject, testProjectId } from '../support/emulators.js';

const projectId = testProjectId('demo-clocks');
const db = new Firestore({ projectId });
let wired: Wired;

beforeAll(() => {
  wired = wireApi(
    loadApiConfig({
      GOOGLE_CLOUD_PROJECT: projectId,
      FIRESTORE_EMULATOR_HOST: process.env.FIRESTORE_EMULATOR_HOST,
      PUBSUB_EMULATOR_HOST: process.env.PUBSUB_EMULATOR_HOST,
      PROXYPLANE_LOCAL: '1',
      ADMIN_TOKENS: 'admin:clocks-test-admin-token-0123',
      LOG_LEVEL: 'error',
    }),
    memoryLogger(),
  );
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});
afterAll(async () => {
  await wired?.close();
  await db.terminate();
  await releaseProject(projectId);
});

const gauge = (text: string, name: string) =>
  new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1];

describe('the API’s scrape-time counts', () => {
  it('count again once their interval has passed on the monotonic clock, the wall clock stepped back', async () => {
    const leases = wired.deps.leases as LeaseApiRuntime;
    let activeCounts = 0;
    vi.spyOn(leases.store, 'countActive').mockImplementation(async () => ++activeCounts);
    const scrape = async () => {
      const text = await leases.registry!.metrics();
      return {
        active: gauge(text, 'proxyplane_leases_active'),
        ready: gauge(text, 'proxyplane_proxies{phase="Ready"}'),
      };
    };
    // The first scrape waits SCRAPE_WAIT_MS (5 s) at most for its count: real reads first — the aggregation
    // query on the emulator, the API's own client's connection — so that a cold emulator under load does
    // not take longer than that and fail the test for the wrong reason.
    await Promise.all([countProxiesByPhase(db), wired.deps.store.get('warm-up')]);
    // Only Date and performance are faked (the clients' timers run as usual): the test moves them.
    vi.useFakeTimers({ toFake: ['Date', 'performance'], now: new Date() });
    expect(await scrape()).toEqual({ active: '1', ready: '0' });

    await new FirestoreProxyStore(db).create(aProxy({ name: 'r1', status: { phase: 'Ready' } }));
    vi.advanceTimersByTime(1_000);
    expect(await scrape()).toEqual({ active: '1', ready: '0' }); // inside both intervals: reused

    vi.setSystemTime(Date.now() - 3_600_000); // NTP steps the wall clock back an hour; performance.now() stays
    vi.advanceTimersByTime(15_000); // both clocks: past both intervals (10 s, 15 s)
    expect(await scrape()).toEqual({ active: '2', ready: '1' });
  });
});
