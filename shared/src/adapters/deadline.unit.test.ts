import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../ports/clock.js';
import {
  BUDGET_FLOOR_MS,
  boundFirestoreCall,
  budgeted,
  throwIfGivenUp,
  withDeadlineAt,
  withinBudget,
  withRequestBudget,
} from './deadline.js';

describe('withDeadlineAt (a bound on a call, to an absolute end)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('gives the call the time left until the end, as measured on the clock when called', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    const end = clock.now().getTime() + 10_000;
    clock.advance(3_000);
    let error: unknown;
    withDeadlineAt(new Promise(() => {}), end, clock, (ms) => new Error(`no answer within ${ms} ms`)).catch(
      (e: unknown) => {
        error = e;
      },
    );
    await vi.advanceTimersByTimeAsync(6_999);
    expect(error).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect((error as Error).message).toBe('no answer within 7000 ms');
  });

  it('gives none once the end has passed, and passes on an answer in time', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    const past = withDeadlineAt(
      new Promise(() => {}),
      clock.now().getTime() - 5_000,
      clock,
      (ms) => new Error(`within ${ms} ms`),
    );
    const rejected = expect(past).rejects.toThrow('within 0 ms');
    await vi.advanceTimersByTimeAsync(0);
    await rejected;
    await expect(
      withDeadlineAt(Promise.resolve('ok'), clock.now().getTime() + 1_000, clock, () => new Error('late')),
    ).resolves.toBe('ok');
  });
});

describe('boundFirestoreCall (one Firestore call, given up at its deadline)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  class StoreFailure extends Error {}

  it("gives the call up at ms with the store's error, and aborts the call's signal", async () => {
    let signal!: AbortSignal;
    const call = boundFirestoreCall(
      20,
      'read x',
      (s) => {
        signal = s;
        return new Promise<never>(() => {});
      },
      (message) => new StoreFailure(message),
    );
    const rejected = expect(call).rejects.toThrow(
      expect.objectContaining({ message: 'read x: no answer from Firestore within 20 ms' }),
    );
    await vi.advanceTimersByTimeAsync(19);
    expect(signal.aborted).toBe(false);
    expect(() => throwIfGivenUp(signal)).not.toThrow();
    await vi.advanceTimersByTimeAsync(1);
    await rejected;
    await expect(call).rejects.toBeInstanceOf(StoreFailure);
    expect(signal.aborted).toBe(true);
    expect(() => throwIfGivenUp(signal)).toThrow(StoreFailure);
  });

  it('without a deadline (undefined or null) is the call as is; an answer in time is passed on', async () => {
    for (const ms of [undefined, null]) {
      let signal!: AbortSignal;
      const call = boundFirestoreCall(
        ms,
        'read x',
        (s) => {
          signal = s;
          return new Promise((r) => setTimeout(() => r('late'), 60_000));
        },
        () => new Error('given up'),
      );
      await vi.advanceTimersByTimeAsync(60_000);
      await expect(call).resolves.toBe('late');
      expect(signal.aborted).toBe(false);
    }
    await expect(
      boundFirestoreCall(
        20,
        'x',
        async () => 'ok',
        () => new Error('late'),
      ),
    ).resolves.toBe('ok');
  });
});

describe("a request budget (withRequestBudget → budgeted): calls in a row end by the request's end", () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
  afterEach(() => vi.useRealTimers());

  it('outside a budget a bound is as given; inside, cut to what is left — across awaits — and 0 once spent', async () => {
    expect(budgeted(3_000)).toBe(3_000);
    expect(budgeted(undefined)).toBeNull();
    expect(budgeted(null)).toBeNull();
    const seen: (number | null)[] = [];
    const done = withRequestBudget(8_000, async () => {
      seen.push(budgeted(3_000), budgeted(null));
      await new Promise((r) => setTimeout(r, 6_000));
      seen.push(budgeted(3_000), budgeted(undefined));
      await new Promise((r) => setTimeout(r, 3_000));
      seen.push(budgeted(3_000));
    });
    await vi.advanceTimersByTimeAsync(9_000);
    await done;
    expect(seen).toEqual([3_000, 8_000, 2_000, 2_000, 0]);
  });

  it('a budget inside another never ends after the outer one', () => {
    withRequestBudget(1_000, () => {
      expect(withRequestBudget(5_000, () => budgeted(null))).toBe(1_000);
      expect(withRequestBudget(200, () => budgeted(null))).toBe(200);
    });
  });

  it('boundFirestoreCall inside a budget gives the call up at what is left, and says so', async () => {
    let signal!: AbortSignal;
    const call = withRequestBudget(500, () =>
      boundFirestoreCall(
        3_000,
        'read x',
        (s) => {
          signal = s;
          return new Promise<never>(() => {});
        },
        (message) => new Error(message),
      ),
    );
    const rejected = expect(call).rejects.toThrow(
      "read x: no answer from Firestore within 500 ms (what was left of the request's budget)",
    );
    await vi.advanceTimersByTimeAsync(499);
    expect(signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await rejected;
    expect(signal.aborted).toBe(true);
  });

  it('with the budget spent a call is not made at all (a transaction not begun writes nothing)', async () => {
    const made = vi.fn(async () => 'written');
    const call = withRequestBudget(1_000, async () => {
      await new Promise((r) => setTimeout(r, 1_000));
      return boundFirestoreCall(3_000, 'write x', made, (message) => new Error(message));
    });
    const rejected = expect(call).rejects.toThrow("write x: not sent, the request's time budget is spent");
    await vi.advanceTimersByTimeAsync(1_000);
    await rejected;
    expect(made).not.toHaveBeenCalled();
  });
});

describe('withinBudget (the one place a budgeted call decides how long it may wait)', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
  afterEach(() => vi.useRealTimers());

  const errors = { spent: () => new Error('spent'), timeout: (ms: number) => new Error(`late at ${ms}`) };
  const never = () => new Promise<never>(() => {});

  it('no bound and no budget: started as is, with no bound', async () => {
    const start = vi.fn(async (_bound: number | null) => 'ok');
    await expect(withinBudget(null, start, errors)).resolves.toBe('ok');
    expect(start).toHaveBeenCalledWith(null);
  });

  it('its own bound, or what is left of the budget when less: started with it and given up at it', async () => {
    const bounds: (number | null)[] = [];
    const own = withinBudget(
      300,
      (b) => {
        bounds.push(b);
        return never();
      },
      errors,
    );
    const cut = withRequestBudget(200, () =>
      withinBudget(
        300,
        (b) => {
          bounds.push(b);
          return never();
        },
        errors,
      ),
    );
    const outcomes = Promise.all([
      expect(own).rejects.toThrow('late at 300'),
      expect(cut).rejects.toThrow('late at 200'),
    ]);
    await vi.advanceTimersByTimeAsync(300);
    await outcomes;
    expect(bounds).toEqual([300, 200]);
  });

  it(`with less than BUDGET_FLOOR_MS (${BUDGET_FLOOR_MS} ms) left the budget counts as spent: not started`, async () => {
    const starts: (number | null)[] = [];
    const start = async (b: number | null) => {
      starts.push(b);
      return 'ok';
    };
    const seen: (number | null)[] = [];
    const done = withRequestBudget(1_000, async () => {
      await new Promise((r) => setTimeout(r, 1_000 - BUDGET_FLOOR_MS));
      seen.push(budgeted(3_000));
      await withinBudget(3_000, start, errors);
      await new Promise((r) => setTimeout(r, 1));
      seen.push(budgeted(3_000), budgeted(20));
      return withinBudget(3_000, start, errors);
    });
    const rejected = expect(done).rejects.toThrow('spent');
    await vi.advanceTimersByTimeAsync(1_000);
    await rejected;
    expect(seen).toEqual([BUDGET_FLOOR_MS, 0, 0]);
    expect(starts).toEqual([BUDGET_FLOOR_MS]);
  });

  it('with the budget spent: not started', async () => {
    const start = vi.fn(async () => 'ok');
    const done = withRequestBudget(100, async () => {
      await new Promise((r) => setTimeout(r, 100));
      return withinBudget(3_000, start, errors);
    });
    const rejected = expect(done).rejects.toThrow('spent');
    await vi.advanceTimersByTimeAsync(100);
    await rejected;
    expect(start).not.toHaveBeenCalled();
  });
});
