// The probe function's own documents (`health/{proxy}`): it is their only writer, and it writes one only
// when the state changed. Reconcile reads them to fold the verdict into status.
//
// Two passes of overlapping probe invocations (an active pass that runs past the next tick, the next
// tick's passive pass) may decide on the same proxy at once. So a state is read with its stored version
// and written only on top of exactly that version: a write that lost the race reports a conflict and is
// not applied, and the pass re-reads and decides again with the same results (docs/health.md
// § Overlapping ticks). Nothing overwrites an update it did not see.
import type { ProxyHealthState } from '../domain/health/proxy-health.js';

/** The stored version a state was read at: opaque outside the adapter, handed back to write on top of it. */
export type HealthVersion = string;

export interface VersionedHealth {
  state: ProxyHealthState;
  version: HealthVersion;
}

export interface HealthWrite {
  state: ProxyHealthState;
  /** The version the state was decided on; null when the proxy had no stored state (the write creates
   *  it, and conflicts when another writer created it first). */
  base: HealthVersion | null;
}

/**
 * conflict: the document is no longer at `base` (changed, created or deleted since); nothing was written.
 * failed: the store failed this write after others of the same call had landed — not known to be written.
 */
export type HealthWriteResult = 'written' | 'conflict' | 'failed';

export interface HealthStore {
  /** The stored states among `names`, each with its version; a proxy without one is absent. */
  getMany(names: string[]): Promise<Map<string, VersionedHealth>>;
  /** One stored state, for readers that never write it back (reconcile). */
  get(name: string): Promise<ProxyHealthState | null>;
  /** Writes each state if its document is still at its `base`, each on its own: one result per write, in
   *  order. Throws when the store fails before any write of the call landed; after one has, the writes
   *  it failed answer `failed` (a caller that retried the whole call would write the landed ones twice). */
  writeMany(writes: HealthWrite[]): Promise<HealthWriteResult[]>;
  deleteMany(names: string[]): Promise<void>;
  listNames(): Promise<string[]>;
}
