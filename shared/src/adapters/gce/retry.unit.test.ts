import { describe, expect, it } from 'vitest';
import { AttemptTimeoutError, withRetry } from './retry.js';

const failing = (codes: number[]) => {
  let calls = 0;
  const fn = async () => {
    const code = codes[calls++];
    if (code === undefined) return 'ok';
    throw Object.assign(new Error('{}'), { code });
  };
  return { fn, calls: () => calls };
};

describe('withRetry', () => {
  const sleeps: number[] = [];
  const opts = {
    attempts: 4,
    baseMs: 100,
    maxMs: 300,
    random: () => 0.5,
    sleep: async (ms: number) => {
      sleeps.push(ms);
    },
  };

  it('retries 5xx with capped, jittered backoff until success', async () => {
    sleeps.length = 0;
    const f = failing([503, 500, 502]);
    await expect(withRetry(f.fn, opts)).resolves.toBe('ok');
    expect(f.calls()).toBe(4);
    expect(sleeps).toEqual([50, 100, 150]);
  });

  it('gives up after the bound and throws the last error', async () => {
    const f = failing([503, 503, 503, 503, 503]);
    await expect(withRetry(f.fn, opts)).rejects.toMatchObject({ code: 503 });
    expect(f.calls()).toBe(4);
  });

  it('does not retry a stockout answered as 503 insufficientCapacity: QuotaRetry is its retry', async () => {
    let calls = 0;
    const stockout = async () => {
      calls++;
      throw Object.assign(
        new Error(JSON.stringify({ error: { code: 503, errors: [{ reason: 'insufficientCapacity' }] } })),
        { code: 503 },
      );
    };
    await expect(withRetry(stockout, opts)).rejects.toMatchObject({ code: 503 });
    expect(calls).toBe(1);
  });

  it.each([400, 403, 404, 409])('does not retry %i', async (code) => {
    const f = failing([code]);
    await expect(withRetry(f.fn, opts)).rejects.toMatchObject({ code });
    expect(f.calls()).toBe(1);
  });
});

describe('withRetry deadline per attempt', () => {
  it('counts an attempt that never settles as unanswered: retried, then thrown as AttemptTimeoutError', async () => {
    let calls = 0;
    const never = () => {
      calls++;
      return new Promise<string>(() => {});
    };
    const opts = { attempts: 3, baseMs: 1, maxMs: 1, attemptTimeoutMs: 20, sleep: async () => {} };
    await expect(withRetry(never, opts)).rejects.toBeInstanceOf(AttemptTimeoutError);
    expect(calls).toBe(3);
  });

  it('lets an attempt that answers in time through', async () => {
    const slow = () => new Promise<string>((resolve) => setTimeout(() => resolve('ok'), 5));
    await expect(
      withRetry(slow, { attempts: 1, baseMs: 1, maxMs: 1, attemptTimeoutMs: 1_000 }),
    ).resolves.toBe('ok');
  });
});
