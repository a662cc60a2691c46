// The seed's Provider interface (§5): the only way reconcile and GC touch instances. Pluggable by name
// (spec.provider); gce is the one implementation. Observation is poll-based: nothing here watches.
import type { Failure, FailureKind, InstanceRequest, ObservedInstance } from '../domain/reconcile/types.js';

/** An instance found by listByTag, with its ownership proof (labels) for the GC's orphan rule (seed §8). */
export interface OwnedInstance extends ObservedInstance {
  /** The proxyplane-uid label: which proxy it belongs to. */
  uid: string;
  proxyName: string | null;
  createdAt: Date | null;
}

/** ProviderError.reason of a listing its `stop` ended (ListOptions). */
export const LISTING_STOPPED = 'listing_stopped';
export const isListingStopped = (err: unknown): boolean =>
  err instanceof ProviderError && err.reason === LISTING_STOPPED;

export interface ListOptions {
  stop?: () => boolean;
}

export interface OwnedInstanceList {
  instances: OwnedInstance[];
  /** Scopes (zones) that did not answer: the GC must not treat their instances as absent. */
  unreachable: string[];
}

/** What a delete call did (Provider.delete). */
export type DeleteOutcome = 'deleting' | 'not-ready';

export interface Provider {
  readonly name: string;
  /** Idempotent: creating an instance that already exists under the same name succeeds (409 = success). */
  create(request: InstanceRequest): Promise<{ providerId: string }>;
  /** null when the instance does not exist. */
  get(providerId: string): Promise<ObservedInstance | null>;
  /**
   * Idempotent: deleting a missing instance succeeds (404 = success). Fire-and-forget: 'deleting' once the
   * delete is under way (or the instance is gone). 'not-ready': the provider refused it for now, because
   * the instance is still being created (GCE answers resourceNotReady until the insert Operation is DONE);
   * nothing was done, and the caller must ask again later.
   */
  delete(providerId: string): Promise<DeleteOutcome>;
  /**
   * Why the last create of a missing instance failed, for providers that report create failures
   * asynchronously (GCE reports quota and stockouts inside the insert Operation). null: no such failure known.
   */
  lastCreateFailure?(providerId: string): Promise<Failure | null>;
  /**
   * Every instance carrying this plane's ownership labels, across all zones. `stop`, asked before each
   * page after the first: true ends the listing with a transient ProviderError (a partial listing is no
   * listing) — the GC's run budget, which a slow Compute paging a large fleet would otherwise outrun.
   */
  listByTag(options?: ListOptions): Promise<OwnedInstanceList>;
}

/** The seed's error classes. Classified from status codes and API reasons, never from message text. */
export class ProviderError extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    options?: { cause?: unknown; status?: number; reason?: string },
  ) {
    super(message, { cause: options?.cause });
    this.name = 'ProviderError';
    this.status = options?.status;
    this.reason = options?.reason;
  }
  readonly status: number | undefined;
  readonly reason: string | undefined;

  toFailure(): Failure {
    return { kind: this.kind, message: this.message };
  }
}

/** Providers by spec.provider, as the composition root registers them (seed: r.Providers). */
export type ProviderRegistry = ReadonlyMap<string, Provider>;
