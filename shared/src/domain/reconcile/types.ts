// The vocabulary of one reconcile pass: what the handler observed, what the pure state machine decided.
// A pass is observe → decide (pure) → act → write once (style.md); these types are the seams between.
import type { ManagedSpec, ProxyStatus } from '../proxy.js';
import type { SlotGrant } from './replacement-slots.js';

/** Provider-neutral instance states (seed §5: InstanceState). A RUNNING VM without an address is Provisioning. */
export type InstanceState = 'Provisioning' | 'Running' | 'Stopped' | 'Terminated';

export interface ObservedInstance {
  /** Zone-qualified for gce: zones/<zone>/instances/<name>. */
  providerId: string;
  state: InstanceState;
  ip: string | null;
  /** The spec hash the instance was built from (its label), null when it carries none. */
  specHash: string | null;
  /**
   * What a client must present to the proxy on it, as the VM read it at boot (its metadata): the port and
   * the credentials version. Absent when the provider cannot say. Reconcile paces a replacement only
   * when the new instance would serve the same (managed.ts).
   */
  serves?: { port: number | null; credentialsSecret: string | null };
  /** When the instance was created (GCE creationTimestamp); absent or null when the provider cannot say. */
  createdAt?: Date | null;
}

/** The seed's provider.Class(err): what a provider failure means for the reconcile loop. */
export type FailureKind = 'transient' | 'quota' | 'permanent';
export interface Failure {
  kind: FailureKind;
  message: string;
}

export type InstanceObservation =
  | { kind: 'found'; instance: ObservedInstance }
  /** `createFailure`: why the last create of this instance failed, when the provider can tell (async errors). */
  | { kind: 'missing'; createFailure: Failure | null }
  | { kind: 'error'; failure: Failure };

/**
 * What the instance boots with. `invalid`: a secret or version is missing, disabled or unreadable (fixed
 * by a person or a new version, not by a retry); `spec`: the spec itself cannot produce a cloud-init
 * (latched like any permanent error until the spec changes).
 */
export type CloudInitObservation =
  | {
      ok: true;
      script: string;
      /** SHA-256 of the script: what the spec hash includes (never the script, which may hold secrets). */
      digest: string;
      /** The credentials secret VERSION the instance reads (`projects/p/secrets/s/versions/7`), or null. */
      credentialsSecret: string | null;
    }
  | { ok: false; failure: { kind: 'transient' | 'invalid' | 'spec'; message: string } };

/** The health seam (seed §6): the probe owns health state, reconcile only represents it in status. */
export interface HealthVerdict {
  healthy: boolean;
  latencyMillis: number | null;
  /** When the probe last reported a status-affecting result; null keeps the one in status. */
  checkedAt: Date | null;
  reason: string;
  message: string;
  /** The routes whose TARGET track is UNHEALTHY for this instance, sorted (status.unreachableRoutes). */
  unreachableRoutes: string[];
}

/**
 * What reconcile reads of the probe's state: the instance it is about (domain/health/instance-key.ts) and
 * its verdict, null before it has one. Reconcile uses the verdict only for that instance.
 */
export interface HealthObservation {
  instance: string;
  verdict: HealthVerdict | null;
}

export interface Observation {
  now: Date;
  /** Whether r.Providers[spec.provider] exists (seed §3). */
  providerRegistered: boolean;
  /** null when this pass did not need it (see observationNeeds). */
  cloudInit: CloudInitObservation | null;
  instance: InstanceObservation | null;
  /** null when the probe has stored nothing for the proxy (or the pass did not read it). */
  health: HealthObservation | null;
  /**
   * The answer to a replacement-slot request (replacement-slots.ts), present only once the pass asked: a
   * plan whose `slot` is 'take' makes the pass ask, and a refusal is decided again with it here.
   */
  replacementSlot?: SlotGrant;
  /**
   * Whether the credentials version a found instance serves can still be read, observed only when it is
   * not the one the spec resolves to now (a rotation): `revoked` = disabled, destroyed or gone (a
   * revocation: the instance is replaced at once); `unknown` = Secret Manager did not say (transient).
   */
  servedCredentials?: 'readable' | 'revoked' | 'unknown';
  /**
   * The pass was asked for by hand (a `manual` request: `proxyplane proxies reconcile`), and runs once past
   * the permanent-failure latch (managed.ts isLatched): a cause outside the spec — a grant that had not
   * propagated, a network missing from the configuration — is fixed without a spec edit to say so.
   */
  retryLatched?: boolean;
}

/** Everything a provider needs to create the instance; buildInsertRequest turns it into the API call. */
export interface InstanceRequest {
  name: string;
  proxyName: string;
  uid: string;
  zone: string;
  machineType: string;
  image: string;
  port: number;
  protocol: ManagedSpec['protocol'];
  /** The resolved cloud-init; may carry secret material, so it is never logged. */
  startupScript: string;
  /** A Secret Manager version resource name (a reference the VM resolves), or null. */
  credentialsSecret: string | null;
  specHash: string;
}

export type Action =
  | { kind: 'create'; request: InstanceRequest }
  | { kind: 'delete'; providerId: string }
  /** reconcileDelete's last step: the instance is gone, so the document goes (the finalizer's removal). */
  | { kind: 'deleteDocument' };

/**
 * controller-runtime's Result, with the transient error folded in. `drift` is the seed's RequeueAfter
 * DriftPoll for a steady proxy: it is not stored (nextReconcileAt stays null, so a steady fleet costs no
 * writes); the requeue sweep drift-polls such proxies on a slot derived from the UID instead.
 */
export type Requeue =
  | { kind: 'none' }
  | { kind: 'now' }
  | { kind: 'after'; ms: number }
  | { kind: 'drift' }
  | { kind: 'error'; failure: Failure };

export interface Plan {
  /** The arm of the seed's diagram this pass took (logs and table tests name it). */
  branch: string;
  /** The staged status; patchStatusIfChanged adds observedGeneration, phase and nextReconcileAt. */
  status: ProxyStatus;
  /** Every arm does at most one outside-world action. */
  action: Action | null;
  requeue: Requeue;
  /**
   * 'take': the action deletes a serving instance for a stale hash, and may run only with a replacement
   * slot (the pass asks for one right before acting). 'release': the replacement is over (the new
   * instance with the current hash found healthy, or the document goes), so any slot the proxy holds is freed.
   */
  slot?: 'take' | 'release';
  /** The 'provisioning' arm: how long the instance has been booting (the later of its creation and
   *  Provisioned turning False), what the handler reports a slow boot by. */
  bootingMs?: number;
}

/**
 * What the handler reports back after acting: create's providerId, what a delete did (Provider.delete:
 * 'not-ready' = refused for now, the instance still being created), or the classified failure.
 */
export type ActionResult =
  | { ok: true; providerId?: string; deleteOutcome?: 'deleting' | 'not-ready' }
  | { ok: false; failure: Failure };

/** The seed's poll intervals (reconcile constants), in milliseconds. */
export interface PollIntervals {
  ProvisioningPoll: number;
  DeletionPoll: number;
  DriftPoll: number;
  QuotaRetry: number;
  /** Floor and ceiling of the CloudInitError backoff. */
  CloudInitRetryMin: number;
  CloudInitRetryMax: number;
  /** How soon a proxy that found no replacement slot asks again (RECONCILE_REPLACEMENT_RETRY_MS). */
  ReplacementRetry: number;
}

export const defaultPollIntervals: PollIntervals = {
  ProvisioningPoll: 5_000,
  DeletionPoll: 5_000,
  DriftPoll: 60_000,
  QuotaRetry: 60_000,
  CloudInitRetryMin: 10_000,
  CloudInitRetryMax: 600_000,
  ReplacementRetry: 30_000,
};
