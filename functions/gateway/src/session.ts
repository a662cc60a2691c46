// The seams between this data plane and the controller session (control-plane seed §2), which is
// built separately: a SnapshotSource delivers validated snapshots and deltas and ACKs what the worker
// reports back; a Reporter reads runtime counts and outcomes at its own bounded interval. Standalone
// mode plugs in a file source and a local reporter.
import type { AppliedVersion } from '../../../shared/src/domain/gateway/acceptance.js';
import type { GatewayDelta, GatewaySnapshot } from '../../../shared/src/messages/gateway-snapshot.js';
import type { TakenOutcome } from './outcomes.js';
import type { ApplyResult, ProxyRuntimeCount } from './worker.js';

export interface SnapshotSink {
  /** ok → AcknowledgeSnapshot(version, epoch, checksum); !ok && needFullSnapshot → ask for a full one. */
  applySnapshot(snapshot: GatewaySnapshot): Promise<ApplyResult>;
  applyDelta(delta: GatewayDelta): Promise<ApplyResult>;
  /** The controller's max stale age, handed out at registration (seed §3). */
  setMaxStaleAge?(ms: number): void;
}

export interface SnapshotSource {
  /**
   * Resolves once the first snapshot was offered (applied or not), or at once when `stopping` aborts
   * (shutdown during start-up: stop() follows); keeps delivering until stop().
   */
  start(sink: SnapshotSink, stopping?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
}

export interface RuntimeView {
  /** Sparse: proxies with a non-zero count; [] means every count is zero (seed §2). */
  runtimeCounts(): ProxyRuntimeCount[];
  /** Oldest first, each with its age at the take on the worker's monotonic clock (its origin is its own). */
  takeOutcomes(max: number): TakenOutcome[];
  /** `n` outcomes taken were dropped unsent, too old to report (control/reporting.ts): counted. */
  outcomesExpired(n: number): void;
  appliedVersion(): AppliedVersion | null;
  /** ReportRuntimeResponse.revoke_proxy_ids: the controller's current set (an empty one clears). */
  revokeProxyIds(names: readonly string[]): void;
  /** Requests admitted, waiting for the SSRF guard's look-up: no proxy picked yet, so in no count. */
  readonly checking: number;
}

export interface Reporter {
  start(view: RuntimeView): void;
  stop(): Promise<void>;
}
