// A FirestoreLeaseStore's two clocks from a test's ManualClock. The store requires a monotonic clock for
// what it times in-process (FirestoreLeaseStoreOptions.monotonicNow); the tests' ManualClock steps stand
// for elapsed time (never a wall clock stepped back), so it times those ages too — both move together.
import type { ManualClock } from '../../shared/src/ports/clock.js';

export function storeClocks(clock: ManualClock): { clock: ManualClock; monotonicNow: () => number } {
  return { clock, monotonicNow: () => clock.now().getTime() };
}
