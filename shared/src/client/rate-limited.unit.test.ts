// A 429 rate_limited (the API's per-caller limit, docs/api.md § Rate limits) is retried like a 503: after
// Retry-After when that is at most 5 s (a longer one is given up at once, never sent early), up to `retries`
// times, then given up with the stable code. Nothing was done by the refused request, so sending it again —
// an acquire included — is safe.
import { describe, expect, it, vi } from 'vitest';
import { fakeFetch, grant } from './client-fixtures.unit.js';
import { LeaseApiError, LeaseClient } from './index.js';

const limited = [429, { error: 'rate_limited', message: 'too many' }, { 'retry-after': '2' }] as const;

describe('LeaseClient on 429 rate_limited', () => {
  it('waits Retry-After and sends the acquire again', async () => {
    vi.useFakeTimers();
    try {
      const f = fakeFetch([limited, [201, grant]]);
      const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch, retries: 1 });
      const acquired = client.acquire();
      await vi.advanceTimersByTimeAsync(1_900);
      expect(f.calls).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(200);
      expect(await acquired).toEqual(grant);
      expect(f.calls).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives up at once, not early, when Retry-After asks for longer than it waits (5 s)', async () => {
    // The caller's own bucket on that instance holds no token until then: a request sent at 5 s is refused
    // again, spending a retry and counting as one more refusal on /metrics.
    vi.useFakeTimers();
    try {
      const long = [429, limited[1], { 'retry-after': '30' }] as const;
      const f = fakeFetch([long, [201, grant]]);
      const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch, retries: 2 });
      let settled: unknown = 'pending';
      void client.acquire().then(
        (v) => (settled = v),
        (e: unknown) => (settled = e),
      );
      await vi.advanceTimersByTimeAsync(0);
      expect(settled).toBeInstanceOf(LeaseApiError);
      expect(settled).toMatchObject({ status: 429, code: 'rate_limited', retryAfterSeconds: 30 });
      expect(f.calls).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives up after its retries with status 429 and code rate_limited', async () => {
    vi.useFakeTimers();
    try {
      const f = fakeFetch([limited, limited, [201, grant]]);
      const client = new LeaseClient({ baseUrl: 'http://api', fetch: f.fetch, retries: 1 });
      const acquired = client.acquire().catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(5_000);
      const err = await acquired;
      expect(err).toBeInstanceOf(LeaseApiError);
      expect(err).toMatchObject({ status: 429, code: 'rate_limited' });
      expect(f.calls).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });
});
