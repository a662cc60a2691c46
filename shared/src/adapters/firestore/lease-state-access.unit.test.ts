// bounded / guard inside a spent request budget: the Firestore call is never started, so its "not sent"
// is true and there is no orphaned call whose later rejection nobody hears.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type RejectionRecorder,
  recordUnhandledRejections,
} from '../../../../test/support/unhandled-rejections.js';
import { withRequestBudget } from '../deadline.js';
import { bounded, guard } from './lease-state-access.js';

describe('lease state access inside a spent request budget', () => {
  let rejections: RejectionRecorder;
  beforeEach(() => {
    rejections = recordUnhandledRejections();
  });
  afterEach(() => {
    rejections.stop();
  });

  // A call that, once started, rejects a little later — as a Firestore call given up would.
  const lateFailure = () =>
    vi.fn(() => new Promise<never>((_, reject) => setTimeout(() => reject(new Error('late')), 10)));
  const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

  it('bounded does not start the call: "not sent" is true, and nothing rejects unheard', async () => {
    const call = lateFailure();
    await expect(withRequestBudget(0, () => bounded(call, 'write x'))).rejects.toThrow(/not sent/);
    await settle();
    expect(call).not.toHaveBeenCalled();
    expect(rejections.reasons).toEqual([]);
  });

  it('guard does not start the call either', async () => {
    const call = lateFailure();
    await expect(withRequestBudget(0, () => guard('read x', call))).rejects.toThrow(/read x/);
    await settle();
    expect(call).not.toHaveBeenCalled();
    expect(rejections.reasons).toEqual([]);
  });

  it('with budget left the call is made and answered', async () => {
    const call = vi.fn(async () => 'answer');
    await expect(withRequestBudget(5_000, () => bounded(call, 'read x'))).resolves.toBe('answer');
    expect(call).toHaveBeenCalledTimes(1);
  });
});
