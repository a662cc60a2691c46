// The fleet page's source of truth: the current FleetInputs and a change signal. The Firestore feed
// (firestore-feed.ts) listens to the plane's collections; InMemoryFleetFeed serves unit tests.
import type { ProxyHealthState } from '../../../../shared/src/domain/health/proxy-health.js';
import type { Cooldown, LeaseEntry } from '../../../../shared/src/domain/leases/model.js';
import type { ProxyResource } from '../../../../shared/src/domain/proxy.js';
import type { JobRun } from '../../../../shared/src/ports/job-runs.js';
import type { FleetInputs, OwnershipView, UNREADABLE_STATE } from './view-model.js';

export interface FleetFeed {
  /** Resolves once every collection has been read (starting the listeners if they are idle). */
  ready(): Promise<void>;
  inputs(): FleetInputs;
  /** `onChange` runs after any document changed; returns the unsubscribe function. */
  subscribe(onChange: () => void): () => void;
  stop(): Promise<void>;
}

export class InMemoryFleetFeed implements FleetFeed {
  readonly proxies = new Map<string, ProxyResource>();
  readonly health = new Map<string, ProxyHealthState>();
  readonly leaseState = new Map<string, LeaseEntry[] | typeof UNREADABLE_STATE>();
  cooldowns: Cooldown[] = [];
  readonly ownership = new Map<string, OwnershipView>();
  jobRuns: JobRun[] = [];
  private readonly listeners = new Set<() => void>();

  async ready(): Promise<void> {}

  inputs(): FleetInputs {
    return {
      proxies: this.proxies,
      health: this.health,
      leaseState: this.leaseState,
      cooldowns: this.cooldowns,
      ownership: this.ownership,
      jobRuns: this.jobRuns,
    };
  }

  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }

  get subscribers(): number {
    return this.listeners.size;
  }

  /** Call after mutating the maps, as a Firestore snapshot would. */
  changed(): void {
    for (const l of this.listeners) l();
  }

  async stop(): Promise<void> {
    this.listeners.clear();
  }
}
