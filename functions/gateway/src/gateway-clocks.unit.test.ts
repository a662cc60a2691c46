// The gateway times what it measures in-process (the worker's stale age, its grant and drain bounds; the
// session's waits and backoffs) on a monotonic clock, and no construction falls back to the wall clock:
// WorkerOptions.monotonicNow and SessionDeps.monotonicNow are required. Defaulted to `now`, a composition
// that left one out compiled and passed every test, and a wall clock stepped back an hour (NTP, a VM
// resumed) held a snapshot fresh — and a backoff waiting — for that hour.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { startStandaloneGateway } from '../../../test/support/standalone-gateway.js';
import type { SessionDeps } from './control/session.js';
import { CredentialCache, StaticCredentialResolver } from './credentials.js';
import { jsonLogger } from './logger.js';
import type { WorkerOptions } from './worker.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the gateway as startGateway composes it', () => {
  it('ages its snapshot on the monotonic clock: a wall clock stepped back an hour does not hold it fresh', async () => {
    // Only Date and performance are faked: the gateway's timers and this test's waits run in real time.
    vi.useFakeTimers({ toFake: ['Date', 'performance'], now: Date.UTC(2026, 0, 1) });
    const t = Date.now();
    const snapshot = buildSnapshot(
      {
        schemaVersion: 1,
        version: 1,
        ownershipEpoch: 1,
        workerId: 'gw-clocks',
        generatedAt: new Date(t).toISOString(),
        validUntil: new Date(t + 7_200_000).toISOString(),
        routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'round-robin' }],
        proxies: [],
      },
      sha256Hex,
    );
    const gw = await startStandaloneGateway(snapshot, 'gw-clocks', { GATEWAY_MAX_STALE_AGE_SECONDS: '30' });
    try {
      expect(gw.worker.accepting).toBe(true);
      vi.setSystemTime(Date.now() - 3_600_000); // NTP steps the wall clock back an hour
      vi.advanceTimersByTime(31_000); // both clocks: 31 s of the process's life, past the 30 s stale age
      gw.worker.tick();
      expect(gw.worker.phase()).toBe('stale');
      expect(gw.worker.accepting).toBe(false);
    } finally {
      await gw.shutdown();
    }
  });
});

describe('no wall-clock default for a monotonic clock', () => {
  // Checked by tsc (npx tsc --noEmit -p .): each @ts-expect-error fails it should the option turn optional.
  it('a worker or a session built without one does not compile', () => {
    // @ts-expect-error WorkerOptions.monotonicNow is required
    const worker: WorkerOptions = {
      credentials: new CredentialCache(new StaticCredentialResolver(), 60_000, () => 0),
      log: jsonLogger('error', () => {}),
      now: Date.now,
      maxStaleAgeMs: 30_000,
      stickyTableSize: 10,
      outcomeQueueSize: 10,
    };
    // @ts-expect-error SessionDeps.monotonicNow is required
    const session: Pick<SessionDeps, 'now' | 'monotonicNow'> = { now: Date.now };
    expect([worker, session].map((o) => 'monotonicNow' in o)).toEqual([false, false]);
  });
});
