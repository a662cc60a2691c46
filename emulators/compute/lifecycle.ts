// The instance state machine and its timers (GCE's documented lifecycle,
// https://cloud.google.com/compute/docs/instances/instance-life-cycle):
//   insert  → PROVISIONING → (bootDelay/2) STAGING → (bootDelay) boot the proxy → RUNNING
//   stop    → STOPPING (proxy down) → (stopDelay) TERMINATED          (preemption is the same path)
//   start   → STAGING → (bootDelay) boot the proxy → RUNNING           (from TERMINATED only)
//   delete  → STOPPING (proxy down) → (deleteDelay) gone, address freed
// Each transition bumps the record's epoch, so a timer of an overtaken transition does nothing, and
// completes the operations waiting on the transition it replaces.
import type { LoopbackPool } from './address-pool.js';
import type { InstanceRecord } from './instance.js';
import { bootProxy, type ProxyBootDeps } from './instance-proxy.js';
import type { EmulatorLog } from './log.js';
import type { OperationRecord, OperationStore } from './operations.js';

export interface LifecycleTimings {
  bootDelayMs: number;
  stopDelayMs: number;
  deleteDelayMs: number;
}

export interface LifecycleDeps {
  ops: OperationStore;
  pool: LoopbackPool;
  proxy: ProxyBootDeps;
  timings: LifecycleTimings;
  now: () => Date;
  /** removes a deleted record from the store */
  forget(record: InstanceRecord): void;
  log: EmulatorLog;
}

export class Lifecycle {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly gone = new WeakSet<InstanceRecord>();

  constructor(private readonly deps: LifecycleDeps) {}

  /** A timer the emulator cancels on shutdown. */
  schedule(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  boot(record: InstanceRecord, delayMs: number, op: OperationRecord): void {
    const epoch = this.begin(record);
    record.pending.push(op);
    const finish = () => void this.finishBoot(record, epoch);
    if (record.status !== 'PROVISIONING') {
      this.at(record, epoch, delayMs, finish);
      return;
    }
    // chained, not two timers: under event-loop lag timers of different durations may fire out of order
    const half = Math.floor(delayMs / 2);
    this.at(record, epoch, half, () => {
      record.status = 'STAGING';
      this.at(record, epoch, delayMs - half, finish);
    });
  }

  stop(record: InstanceRecord, op: OperationRecord, statusMessage?: string): void {
    if (record.status === 'TERMINATED') {
      this.deps.ops.complete(op);
      return;
    }
    if (record.status === 'STOPPING') {
      record.pending.push(op);
      return;
    }
    const epoch = this.begin(record);
    record.status = 'STOPPING';
    record.pending.push(op);
    this.shutProxy(record);
    this.at(record, epoch, this.deps.timings.stopDelayMs, () => {
      record.status = 'TERMINATED';
      record.statusMessage = statusMessage;
      record.lastStopTimestamp = this.deps.now();
      this.settle(record);
    });
  }

  /** Only from TERMINATED; the caller answers resourceNotReady for STOPPING and no-ops otherwise. */
  start(record: InstanceRecord, op: OperationRecord): void {
    record.status = 'STAGING';
    record.statusMessage = undefined;
    this.boot(record, this.deps.timings.bootDelayMs, op);
  }

  /** Never for a record already deleting: the API refuses that call (instances-api.ts deleteInstance). */
  delete(record: InstanceRecord, op: OperationRecord): void {
    const epoch = this.begin(record);
    record.deleting = true;
    record.status = 'STOPPING';
    record.pending.push(op);
    this.shutProxy(record);
    this.at(record, epoch, this.deps.timings.deleteDelayMs, () => {
      this.gone.add(record);
      this.deps.forget(record);
      this.deps.pool.release(record.address);
      this.settle(record);
    });
  }

  /** Cancels every timer and closes every proxy (emulator stop or reset). */
  async shutdown(records: Iterable<InstanceRecord>): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const closing: Promise<void>[] = [];
    for (const record of records) {
      record.epoch++;
      if (record.proxy) closing.push(record.proxy.close());
      record.proxy = null;
    }
    await Promise.all(closing);
  }

  private async finishBoot(record: InstanceRecord, epoch: number): Promise<void> {
    const before = record.address;
    const result = await bootProxy(record, this.deps.proxy, () => record.epoch === epoch).catch(
      (err: unknown) => ({ ok: false, error: `boot failed: ${String(err)}` }) as const,
    );
    if (record.epoch !== epoch) {
      // overtaken while booting (deleted, stopped, reset): undo what the boot did
      if (result.ok) void result.proxy.close();
      if (this.gone.has(record) && record.address !== before) this.deps.pool.release(record.address);
      return;
    }
    if (result.ok) {
      record.proxy = result.proxy;
      record.proxyError = undefined;
    } else {
      record.proxyError = result.error;
      this.deps.log('ERROR', 'instance booted without a working proxy', {
        instance: record.spec.name,
        zone: record.zone,
        error: result.error,
      });
    }
    record.status = 'RUNNING';
    record.lastStartTimestamp = this.deps.now();
    this.settle(record);
  }

  private begin(record: InstanceRecord): number {
    this.settle(record);
    record.epoch++;
    return record.epoch;
  }

  private at(record: InstanceRecord, epoch: number, ms: number, fn: () => void): void {
    this.schedule(ms, () => {
      if (record.epoch === epoch) fn();
    });
  }

  private settle(record: InstanceRecord): void {
    const pending = record.pending;
    record.pending = [];
    for (const op of pending) this.deps.ops.complete(op);
  }

  private shutProxy(record: InstanceRecord): void {
    if (record.proxy) void record.proxy.close();
    record.proxy = null;
  }
}
