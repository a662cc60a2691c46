// A HealthStore over a Map, for pure unit tests of the probe's passes (the Firestore adapter has its own
// integration tests; both run healthStoreContract). The map is the caller's, so a test can seed and read
// the stored states directly. A state's version is the identity of the object stored: every write stores
// a new object, and so does a test that sets a state in the map (another writer, as far as a pass knows).
import type { ProxyHealthState } from '../domain/health/proxy-health.js';
import type { HealthStore, HealthVersion, HealthWrite, HealthWriteResult } from '../ports/health-store.js';

const ids = new WeakMap<ProxyHealthState, number>();
let nextId = 0;

/** The version of a state object held in a map of stored states. */
export function memoryVersionOf(state: ProxyHealthState): HealthVersion {
  let id = ids.get(state);
  if (id === undefined) {
    id = ++nextId;
    ids.set(state, id);
  }
  return `mem-${id}`;
}

/** Whether `w` may be written on top of what `health` holds (its base is the stored version, or null and
 *  nothing is stored). */
export function memoryWriteFits(health: ReadonlyMap<string, ProxyHealthState>, w: HealthWrite): boolean {
  const current = health.get(w.state.proxy);
  return w.base === null
    ? current === undefined
    : current !== undefined && memoryVersionOf(current) === w.base;
}

export interface InMemoryHealthOptions {
  /** Writes report `written` and change nothing. */
  readOnly?: boolean;
  /** Runs before each write is checked: a test's other writer, between a pass's read and its write. */
  beforeWrite?: (w: HealthWrite) => void;
}

export function inMemoryHealthStore(
  health: Map<string, ProxyHealthState> = new Map(),
  opts: InMemoryHealthOptions = {},
): HealthStore {
  return {
    getMany: async (names) =>
      new Map(
        names.flatMap((n) => {
          const s = health.get(n);
          return s ? [[n, { state: s, version: memoryVersionOf(s) }] as const] : [];
        }),
      ),
    get: async (n) => health.get(n) ?? null,
    writeMany: async (writes) =>
      writes.map((w): HealthWriteResult => {
        opts.beforeWrite?.(w);
        if (!memoryWriteFits(health, w)) return 'conflict';
        if (!opts.readOnly) health.set(w.state.proxy, { ...w.state });
        return 'written';
      }),
    deleteMany: async (names) => {
      if (opts.readOnly) return;
      for (const n of names) health.delete(n);
    },
    listNames: async () => [...health.keys()],
  };
}
