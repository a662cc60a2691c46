import { describe, expect, it } from 'vitest';
import { loadSnapshotConfig } from './config.js';

const env = (over: Record<string, string> = {}) => ({ GOOGLE_CLOUD_PROJECT: 'p', ...over });

describe('loadSnapshotConfig: the planner lock', () => {
  it('is taken for 30 s and extended for up to the function’s timeout (120 s) + 10 s', () => {
    expect(loadSnapshotConfig(env())).toMatchObject({ lockMs: 30_000, lockHoldMs: 130_000 });
  });

  it.each([
    ['45', 45_000],
    ['5', 5_000],
  ])('SNAPSHOT_LOCK_SECONDS=%s: taken for that long', (v, ms) => {
    expect(loadSnapshotConfig(env({ SNAPSHOT_LOCK_SECONDS: v })).lockMs).toBe(ms);
  });

  // A lock of a tick or more, left by a pass that died, keeps the next tick busy: the grants are renewed
  // a tick later, past every gateway's max stale age (150 s).
  it.each(['46', '130'])('SNAPSHOT_LOCK_SECONDS=%s is refused', (v) => {
    expect(() => loadSnapshotConfig(env({ SNAPSHOT_LOCK_SECONDS: v }))).toThrow();
  });
});
