// The passive-pass settings the probe's unit tests share (thresholds 2/3, 3-minute expiry, the default
// worker rule, 5 s settle), and deps for a pass with no gateway outcomes at all.
import type { PassiveDeps } from './passive-pass.js';

export const PASSIVE_TEST_SETTINGS: Pick<PassiveDeps, 'settings' | 'rule' | 'settleMs'> = {
  settings: { successThreshold: 2, failureThreshold: 3, expiryMs: 180_000 },
  rule: { minSamples: 5, maxFailureRatio: 0.5 },
  settleMs: 5000,
};

export const noOutcomes = (): PassiveDeps => ({
  outcomes: { between: async () => [] },
  feed: { cursor: async () => null, commit: async () => 'committed' as const },
  ...PASSIVE_TEST_SETTINGS,
});
