// A HealthStore over a Map, for pure unit tests of the probe's passes (the Firestore adapter has its own
// integration tests). The map is the caller's, so a test can seed and read the stored states directly.
import type { ProxyHealthState } from '../domain/health/proxy-health.js';
import type { HealthStore } from '../ports/health-store.js';

export function inMemoryHealthStore(
  health: Map<string, ProxyHealthState> = new Map(),
  opts: { readOnly?: boolean } = {},
): HealthStore {
  return {
    getMany: async (names) => new Map(names.flatMap((n) => (health.has(n) ? [[n, health.get(n)!]] : []))),
    get: async (n) => health.get(n) ?? null,
    writeMany: async (states) => {
      if (opts.readOnly) return;
      for (const s of states) health.set(s.proxy, s);
    },
    deleteMany: async (names) => {
      if (opts.readOnly) return;
      for (const n of names) health.delete(n);
    },
    listNames: async () => [...health.keys()],
  };
}
