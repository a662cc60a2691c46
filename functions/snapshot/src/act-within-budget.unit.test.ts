// The pass's steps under a slow Pub/Sub: every publish stays pending its whole deadline (10 s) and is then
// answered unconfirmed. A hundred workers, eight at once, took ~130 s with no budget: past the function's
// 120 s timeout. Fake timers drive the publisher's wait and the injected clock alike.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_PUBLISH_DEADLINE_MS } from '../../../shared/src/adapters/pubsub/publisher.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import { PublishError } from '../../../shared/src/ports/publish-error.js';
import { actWithinBudget } from './act-within-budget.js';
import { ACT_CONCURRENCY, SNAPSHOT_PASS_BUDGET_MS } from './pass.js';

const clock: Clock = { now: () => new Date() };
const workers = Array.from({ length: 100 }, (_, i) => `gw-${i}`);

/** A publish that stays pending to its deadline, then is answered unconfirmed. */
const slowPublish = () =>
  new Promise<string>((_, reject) =>
    setTimeout(() => reject(new PublishError('unconfirmed', 'no confirmation')), DEFAULT_PUBLISH_DEADLINE_MS),
  );

/** One pass over `due`: as pass.ts does, a failed step is caught (null) and the pass goes on. */
async function pass(due: readonly string[], publish: (w: string) => Promise<string>) {
  const start = clock.now().getTime();
  const deadline = new Date(start + SNAPSHOT_PASS_BUDGET_MS);
  const started: string[] = [];
  const run = actWithinBudget(due, { concurrency: ACT_CONCURRENCY, clock, deadline }, async (w) => {
    started.push(w);
    return publish(w).catch(() => null);
  });
  let settledMs = -1;
  void run.then(() => {
    settledMs = clock.now().getTime() - start;
  });
  // Bounded: far past what the steps could take one after another.
  await vi.advanceTimersByTimeAsync(due.length * DEFAULT_PUBLISH_DEADLINE_MS);
  return { ...(await run), started, settledMs };
}

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2026-12-06T12:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a pass’s worker steps within its budget', () => {
  it('starts none past the budget under a Pub/Sub that answers every publish at its deadline, and settles within the budget and one step', async () => {
    const r = await pass(workers, slowPublish);
    expect(r.settledMs).toBeGreaterThanOrEqual(0);
    expect(r.settledMs).toBeLessThanOrEqual(SNAPSHOT_PASS_BUDGET_MS + DEFAULT_PUBLISH_DEADLINE_MS);
    expect(r.left.length).toBeGreaterThan(0);
    // Every worker either started (and failed: asked for again) or left, none both, none lost.
    expect([...r.started, ...r.left].sort()).toEqual([...workers].sort());
    expect(r.results).toHaveLength(r.started.length);
  });

  it('the next pass acts on the workers the last one left', async () => {
    const first = await pass(workers, slowPublish);
    const published: string[] = [];
    const next = await pass(first.left, async (w) => {
      published.push(w);
      return w;
    });
    expect(next.left).toEqual([]);
    expect(published.sort()).toEqual([...first.left].sort());
  });
});
