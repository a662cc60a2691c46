// A Scheduler tick, sent strictly (a schedule table or a test that misspells a field fails) and read
// tolerantly (a newer schedule table's field is not a skipped sweep).
import { describe, expect, it } from 'vitest';
import { ReceivedTick, Tick } from './tick.js';

describe('Tick', () => {
  it('is read with a field this version does not know dropped', () => {
    const parsed = ReceivedTick.safeParse({ job: 'gc-sweep', scheduledAt: '2026-12-02T00:00:00Z' });
    expect(parsed.success && parsed.data).toEqual({ job: 'gc-sweep' });
    expect(ReceivedTick.safeParse({ job: 42, scheduledAt: 'x' }).success).toBe(false);
    expect(ReceivedTick.safeParse({ scheduledAt: 'x' }).success).toBe(false);
  });

  it('is sent with no field it does not know', () => {
    expect(Tick.safeParse({ job: 'gc-sweep' }).success).toBe(true);
    expect(Tick.safeParse({ job: 'gc-sweep', scheduledAt: '2026-12-02T00:00:00Z' }).success).toBe(false);
  });
});
