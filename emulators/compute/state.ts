// Everything one emulator instance holds, built once from its options; the API, the admin endpoint
// and the lifecycle all work on this one object (no module-level state, so several emulators can run
// in one process, as the tests do).
import type { ProxyTimeouts } from '../forward-proxy/context.js';
import { type AddressRange, DEFAULT_RANGE, LoopbackPool, randomStart } from './address-pool.js';
import { API_OPERATIONS, type ApiOperation, Faults } from './faults.js';
import { IdSource } from './ids.js';
import { type InstanceRecord, instanceKey } from './instance.js';
import type { ResolveCredentials } from './instance-proxy.js';
import { Lifecycle, type LifecycleTimings } from './lifecycle.js';
import { type EmulatorLog, silentLog } from './log.js';
import { type OperationRecord, OperationStore } from './operations.js';
import { assertZoneNames, DEFAULT_ZONES } from './zones.js';

export interface ComputeEmulatorOptions {
  host?: string;
  /** 0 (the default) picks a free port */
  port?: number;
  /** when set, any other project answers 404; when unset every project is served, each apart */
  projectId?: string;
  zones?: readonly string[];
  bootDelayMs?: number;
  deleteDelayMs?: number;
  /** STOPPING → TERMINATED for stop and preemption; defaults to deleteDelayMs */
  stopDelayMs?: number;
  /** longest a zoneOperations.wait call blocks (GCE: about 2 minutes) */
  waitTimeoutMs?: number;
  resolveCredentials?: ResolveCredentials;
  /**
   * "host:port" of a Secret Manager (our emulator locally): without `resolveCredentials`, instances
   * read their credentials secret there with the real client, as the deployed startup script does.
   */
  secretManagerEndpoint?: string;
  /** loopback addresses handed to instances */
  addressRange?: AddressRange;
  proxyTimeouts?: Partial<ProxyTimeouts>;
  /**
   * Ports every VM's proxy lets CONNECT reach besides its own list: the local plane passes its API's
   * port, the local stand-in for the deployed API's 443 (the probe's BASIC handshake CONNECTs to the
   * echo URL's port, which every deployed VM allows). Tests leave it unset.
   */
  hostConnectPorts?: readonly number[];
  /** Between two failed reads of a VM's secret (default 2 s; the startup script waits 15 s: instance-proxy.ts). */
  credentialRetryDelayMs?: number;
  /** seeds ids and operation names */
  seed?: number;
  log?: EmulatorLog;
  /** without `log`: append JSON log lines to <logDir>/compute-emulator.log */
  logDir?: string;
}

export interface EmulatorState {
  projectId?: string;
  zones: readonly string[];
  zoneSet: ReadonlySet<string>;
  waitTimeoutMs: number;
  timings: LifecycleTimings;
  instances: Map<string, InstanceRecord>;
  ops: OperationStore;
  faults: Faults;
  counters: Record<ApiOperation, number>;
  pool: LoopbackPool;
  lifecycle: Lifecycle;
  ids: IdSource;
  /** `${project}/${requestId}` → the operation that request started (GCE dedupes for 60 minutes) */
  requestIds: Map<string, { op: OperationRecord; at: number }>;
  now: () => Date;
  log: EmulatorLog;
}

export const zeroCounters = (): Record<ApiOperation, number> =>
  Object.fromEntries(API_OPERATIONS.map((op) => [op, 0])) as Record<ApiOperation, number>;

export function createState(opts: ComputeEmulatorOptions): EmulatorState {
  const zones = opts.zones ?? DEFAULT_ZONES;
  assertZoneNames(zones);
  const now = () => new Date();
  const log = opts.log ?? silentLog;
  const ids = new IdSource(opts.seed);
  // Without an explicit range, start the walk at a random address: another Compute emulator on this
  // machine (a parallel test file) then rarely wants the same addresses at the same time.
  const pool = opts.addressRange
    ? new LoopbackPool(opts.addressRange)
    : new LoopbackPool(DEFAULT_RANGE, randomStart(Math.random));
  const ops = new OperationStore(ids, now);
  const instances = new Map<string, InstanceRecord>();
  const deleteDelayMs = opts.deleteDelayMs ?? 500;
  const timings: LifecycleTimings = {
    bootDelayMs: opts.bootDelayMs ?? 1000,
    deleteDelayMs,
    stopDelayMs: opts.stopDelayMs ?? deleteDelayMs,
  };
  const lifecycle = new Lifecycle({
    ops,
    pool,
    timings,
    now,
    log,
    proxy: {
      pool,
      resolveCredentials: opts.resolveCredentials,
      proxyTimeouts: opts.proxyTimeouts,
      hostConnectPorts: opts.hostConnectPorts ?? [],
      credentialRetryDelayMs: opts.credentialRetryDelayMs,
      log,
    },
    forget: (r) => {
      instances.delete(instanceKey(r.project, r.zone, r.spec.name));
      log('INFO', 'instance deleted', {
        project: r.project,
        zone: r.zone,
        name: r.spec.name,
        labels: r.spec.labels ?? {},
      });
    },
  });
  return {
    projectId: opts.projectId,
    zones,
    zoneSet: new Set(zones),
    waitTimeoutMs: opts.waitTimeoutMs ?? 120_000,
    timings,
    instances,
    ops,
    faults: new Faults(),
    counters: zeroCounters(),
    pool,
    lifecycle,
    ids,
    requestIds: new Map(),
    now,
    log,
  };
}
