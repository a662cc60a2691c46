import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { deadlineSignal } from './deadline-signal.js';

// A full collection on demand (as --expose-gc gives), in this process.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether the deadline, built in a frame of its own (nothing else holds its timeout), fires after a GC. */
async function firesAfterGc(make: (own: AbortSignal) => AbortSignal): Promise<string | null> {
  const own = new AbortController();
  const signal = make(own.signal);
  let reason: string | null = null;
  signal.addEventListener('abort', () => {
    reason = (signal.reason as Error).name;
  });
  // Proof the collection ran (else a test of surviving it proves nothing): an object only a WeakRef holds.
  const witness = new WeakRef({});
  await sleep(20);
  gc();
  expect(witness.deref()).toBeUndefined();
  await sleep(300);
  own.abort();
  return reason;
}

describe('deadlineSignal', () => {
  it('times out after a full garbage collection while the caller’s signal is live', async () => {
    expect(await firesAfterGc((own) => deadlineSignal(100, own))).toBe('TimeoutError');
  });

  it("ends at the caller's signal first, with its reason", () => {
    const own = new AbortController();
    const signal = deadlineSignal(60_000, own.signal);
    own.abort(new Error('cancelled'));
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('cancelled');
  });

  it('is the bare timeout without a signal of the caller', async () => {
    const signal = deadlineSignal(10);
    await sleep(50);
    expect((signal.reason as Error).name).toBe('TimeoutError');
  });
});
