// An in-memory Provider with the semantics the gce provider guarantees (create by name is idempotent,
// delete of a missing instance succeeds, deletion takes a poll to finish) plus injectable failures and a
// call log. For handler unit tests; the gce provider itself is tested against the compute emulator.
import type {
  Failure,
  FailureKind,
  InstanceRequest,
  InstanceState,
  ObservedInstance,
} from '../domain/reconcile/types.js';
import {
  type DeleteOutcome,
  type OwnedInstance,
  type OwnedInstanceList,
  type Provider,
  ProviderError,
} from '../ports/provider.js';

interface FakeInstance {
  request: InstanceRequest;
  state: InstanceState;
  ip: string | null;
  /** get() calls left before a deleted instance disappears. */
  deletingFor: number | null;
}

export type ProviderOp = 'create' | 'get' | 'delete';

export class FakeProvider implements Provider {
  readonly name: string;
  readonly instances = new Map<string, FakeInstance>();
  readonly calls: Array<{ op: ProviderOp; providerId: string }> = [];
  /** How many instances were ever created (a 409-style repeat does not count). */
  created = 0;
  /** A delete of a Provisioning instance answers 'not-ready' (still being created) until bootAll(). */
  refuseDeletesWhileCreating = false;
  private readonly faults: Array<{ op: ProviderOp; kind: FailureKind; remaining: number }> = [];
  private readonly asyncCreateFailures = new Map<string, Failure>();
  private asyncFailure: Failure | null = null;
  private nextIp = 10;

  constructor(name = 'gce') {
    this.name = name;
  }

  /** The next `count` calls of `op` fail with `kind` (synchronously, as a 403 quota or a 5xx would). */
  failNext(op: ProviderOp, kind: FailureKind, count = 1): void {
    this.faults.push({ op, kind, remaining: count });
  }

  /** Creates "succeed" but the instance never appears; lastCreateFailure reports why (GCE async quota). */
  failCreatesAsync(failure: Failure | null): void {
    this.asyncFailure = failure;
  }

  /** Every Provisioning instance becomes Running with an address (the boot delay elapsed). */
  bootAll(): void {
    for (const inst of this.instances.values()) {
      if (inst.state === 'Provisioning' && inst.deletingFor === null) {
        inst.state = 'Running';
        inst.ip = `10.0.0.${this.nextIp++}`;
      }
    }
  }

  setState(providerId: string, state: InstanceState): void {
    const inst = this.instances.get(providerId);
    if (!inst) throw new Error(`no instance ${providerId}`);
    inst.state = state;
    if (state !== 'Running') inst.ip = null;
  }

  callsOf(op: ProviderOp): number {
    return this.calls.filter((c) => c.op === op).length;
  }

  async create(request: InstanceRequest): Promise<{ providerId: string }> {
    const providerId = `zones/${request.zone}/instances/${request.name}`;
    this.record('create', providerId);
    if (this.asyncFailure) {
      this.asyncCreateFailures.set(providerId, this.asyncFailure);
      return { providerId };
    }
    this.asyncCreateFailures.delete(providerId);
    if (!this.instances.has(providerId)) {
      this.instances.set(providerId, { request, state: 'Provisioning', ip: null, deletingFor: null });
      this.created++;
    }
    return { providerId };
  }

  async get(providerId: string): Promise<ObservedInstance | null> {
    this.record('get', providerId);
    const inst = this.instances.get(providerId);
    if (!inst) return null;
    if (inst.deletingFor !== null) {
      if (inst.deletingFor <= 0) {
        this.instances.delete(providerId);
        return null;
      }
      inst.deletingFor--;
    }
    return {
      providerId,
      state: inst.state,
      ip: inst.ip,
      specHash: inst.request.specHash,
      serves: { port: inst.request.port, credentialsSecret: inst.request.credentialsSecret },
    };
  }

  async delete(providerId: string): Promise<DeleteOutcome> {
    this.record('delete', providerId);
    const inst = this.instances.get(providerId);
    // GCE refuses a delete until the insert Operation is DONE (gce-provider.ts delete).
    if (
      inst &&
      this.refuseDeletesWhileCreating &&
      inst.state === 'Provisioning' &&
      inst.deletingFor === null
    ) {
      return 'not-ready';
    }
    if (inst && inst.deletingFor === null) {
      inst.deletingFor = 1;
      inst.state = 'Stopped';
      inst.ip = null;
    }
    return 'deleting';
  }

  async lastCreateFailure(providerId: string): Promise<Failure | null> {
    return this.asyncCreateFailures.get(providerId) ?? null;
  }

  async listByTag(): Promise<OwnedInstanceList> {
    const instances: OwnedInstance[] = [...this.instances.entries()].map(([providerId, i]) => ({
      providerId,
      state: i.state,
      ip: i.ip,
      specHash: i.request.specHash,
      uid: i.request.uid,
      proxyName: i.request.proxyName,
      createdAt: null,
    }));
    return { instances, unreachable: [] };
  }

  private record(op: ProviderOp, providerId: string): void {
    this.calls.push({ op, providerId });
    const fault = this.faults.find((f) => f.op === op && f.remaining > 0);
    if (fault) {
      fault.remaining--;
      throw new ProviderError(fault.kind, `injected ${fault.kind} failure on ${op}`);
    }
  }
}
