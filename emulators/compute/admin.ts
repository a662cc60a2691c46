// The emulator's control surface beside the GCE API: fault injection, VM-level events (guest stop,
// preemption, a dead / hung / leaking proxy), clock games for the orphan GC (backdating), request
// counters, inspection and reset. Served over HTTP by admin-router.ts and handed to in-process
// callers as `emulator.admin`. Errors use the house shape {"error": "<stable_code>", "message"}.
import { API_OPERATIONS, type ApiOperation, type ErrorFaultInput, type QuotaFaultInput } from './faults.js';
import { type InstanceRecord, instanceKey } from './instance.js';
import { connectPortsOf, proxyPortOf } from './instance-proxy.js';
import { systemStop } from './instances-api.js';
import { type EmulatorState, zeroCounters } from './state.js';

export class AdminError extends Error {
  readonly kind = 'admin';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface AdminInstanceView {
  project: string;
  zone: string;
  name: string;
  id: string;
  status: string;
  statusMessage?: string;
  creationTimestamp: string;
  labels: Record<string, string>;
  address: string;
  proxyPort: number | null;
  /**
   * the ports its proxy lets CONNECT reach (from the startup script's squid.conf; else 443), plus the
   * emulator's `hostConnectPorts` once the proxy runs
   */
  connectPorts: number[];
  proxy: {
    /** http://address:port while the proxy is listening, else null */
    url: string | null;
    killed: boolean;
    hanging: boolean;
    leaking: boolean;
    openSockets: number;
    error?: string;
  };
}

export interface InstanceFilter {
  project?: string;
  zone?: string;
  status?: string;
}

function view(r: InstanceRecord): AdminInstanceView {
  const port = proxyPortOf(r.spec);
  const p = r.proxy;
  return {
    project: r.project,
    zone: r.zone,
    name: r.spec.name,
    id: r.id,
    status: r.status,
    ...(r.statusMessage ? { statusMessage: r.statusMessage } : {}),
    creationTimestamp: r.createdAt.toISOString(),
    labels: r.spec.labels,
    address: r.address,
    proxyPort: port,
    connectPorts: p?.connectPorts ? [...p.connectPorts] : connectPortsOf(r.spec),
    proxy: {
      url: p && !p.killed ? `http://${r.address}:${p.port}` : null,
      killed: p?.killed ?? false,
      hanging: p?.hanging ?? false,
      leaking: p?.leaking ?? false,
      openSockets: p?.openSockets() ?? 0,
      ...(r.proxyError ? { error: r.proxyError } : {}),
    },
  };
}

export class ComputeAdmin {
  constructor(private readonly state: EmulatorState) {}

  instances(filter: InstanceFilter = {}): AdminInstanceView[] {
    return [...this.state.instances.values()]
      .filter(
        (r) =>
          (!filter.project || r.project === filter.project) &&
          (!filter.zone || r.zone === filter.zone) &&
          (!filter.status || r.status === filter.status),
      )
      .map(view);
  }

  instance(project: string, zone: string, name: string): AdminInstanceView {
    return view(this.find(project, zone, name));
  }

  counters(): Record<ApiOperation | 'total', number> {
    const c = this.state.counters;
    return { ...c, total: API_OPERATIONS.reduce((sum, op) => sum + c[op], 0) };
  }

  resetCounters(): void {
    Object.assign(this.state.counters, zeroCounters());
  }

  // Every field is checked for its type as well as its range: the HTTP body reaches here as parsed JSON,
  // and a value of the wrong type stored in a fault only fails later, in the API call it arms (a quota
  // metric that is not a string threw in the Operation's timer and stopped the emulator's process).
  injectQuota(input: QuotaFaultInput): void {
    if (!isCount(input.count)) throw invalid('count must be a non-negative integer');
    if (input.mode !== undefined && !(QUOTA_MODES as readonly unknown[]).includes(input.mode))
      throw invalid('mode is sync, async or stockout');
    if (input.metric !== undefined && !(typeof input.metric === 'string' && QUOTA_METRIC.test(input.metric)))
      throw invalid('metric must be a GCE quota metric name such as CPUS or IN_USE_ADDRESSES');
    if (input.limit !== undefined && !(Number.isFinite(input.limit) && input.limit >= 0))
      throw invalid('limit must be a non-negative number');
    this.state.faults.setQuota(input);
  }

  injectErrors(input: ErrorFaultInput): void {
    if (input.count !== undefined && !isCount(input.count))
      throw invalid('count must be a non-negative integer');
    if (input.rate !== undefined && !(typeof input.rate === 'number' && input.rate >= 0 && input.rate <= 1))
      throw invalid('rate must be within 0..1');
    if (
      input.code !== undefined &&
      !(
        Number.isInteger(input.code) &&
        ((input.code >= 500 && input.code <= 599) || input.code === 403 || input.code === 429)
      )
    ) {
      throw invalid('code must be a 5xx status, or 403 / 429 (the API rate limit)');
    }
    if (input.operations !== undefined && !Array.isArray(input.operations))
      throw invalid('operations must be a list of operation names');
    const unknown = input.operations?.filter((op) => !(API_OPERATIONS as readonly unknown[]).includes(op));
    if (unknown?.length)
      throw invalid(`unknown operations: ${unknown.map((op) => JSON.stringify(op)).join(', ')}`);
    if (input.seed !== undefined && !Number.isInteger(input.seed)) throw invalid('seed must be an integer');
    this.state.faults.setErrors(input);
  }

  /** Without `nextInserts` the emulator-wide boot delay changes; with it only the next N inserts. */
  setBootDelay(bootDelayMs: number, nextInserts?: number): void {
    if (!Number.isInteger(bootDelayMs) || bootDelayMs < 0)
      throw invalid('bootDelayMs must be a non-negative integer');
    if (nextInserts === undefined) this.state.timings.bootDelayMs = bootDelayMs;
    else if (!Number.isInteger(nextInserts) || nextInserts < 1)
      throw invalid('nextInserts must be a positive integer');
    else this.state.faults.addSlowBoot(bootDelayMs, nextInserts);
  }

  setUnreachableZones(zones: string[]): void {
    if (!Array.isArray(zones)) throw invalid('zones must be a list');
    const unknown = zones.filter((z) => typeof z !== 'string' || !this.state.zoneSet.has(z));
    if (unknown.length) throw invalid(`unknown zones: ${unknown.map((z) => JSON.stringify(z)).join(', ')}`);
    this.state.faults.unreachableZones.clear();
    for (const z of zones) this.state.faults.unreachableZones.add(z);
  }

  faults(): Record<string, unknown> {
    return { ...this.state.faults.describe(), bootDelayMs: this.state.timings.bootDelayMs };
  }

  clearFaults(): void {
    this.state.faults.clear();
  }

  /** A shutdown from inside the guest: STOPPING → TERMINATED (operation compute.instances.guestTerminate). */
  stopInstance(project: string, zone: string, name: string): { operation: string } {
    return { operation: systemStop(this.state, this.find(project, zone, name), false).name };
  }

  /** Preemption: STOPPING → TERMINATED (operation compute.instances.preempted), stays TERMINATED. */
  preemptInstance(project: string, zone: string, name: string): { operation: string } {
    return { operation: systemStop(this.state, this.find(project, zone, name), true).name };
  }

  backdate(
    project: string,
    zone: string,
    name: string,
    to: { creationTimestamp?: string; ageMs?: number },
  ): AdminInstanceView {
    const record = this.find(project, zone, name);
    let at: number;
    if (to.creationTimestamp !== undefined) {
      if (typeof to.creationTimestamp !== 'string')
        throw invalid('creationTimestamp must be a string (RFC 3339)');
      at = Date.parse(to.creationTimestamp);
    } else if (
      to.ageMs !== undefined &&
      typeof to.ageMs === 'number' &&
      Number.isFinite(to.ageMs) &&
      to.ageMs >= 0
    )
      at = this.state.now().getTime() - to.ageMs;
    else throw invalid('give creationTimestamp (RFC 3339) or ageMs (>= 0)');
    if (!Number.isFinite(at)) throw invalid('creationTimestamp is not a timestamp');
    record.createdAt = new Date(at);
    return view(record);
  }

  async killProxy(project: string, zone: string, name: string): Promise<AdminInstanceView> {
    const record = this.withProxy(project, zone, name);
    await record.proxy!.kill();
    return view(record);
  }

  async reviveProxy(project: string, zone: string, name: string): Promise<AdminInstanceView> {
    const record = this.withProxy(project, zone, name);
    await record.proxy!.revive();
    return view(record);
  }

  hangProxy(project: string, zone: string, name: string, on = true): AdminInstanceView {
    const record = this.withProxy(project, zone, name);
    record.proxy!.hang(on);
    return view(record);
  }

  leakProxy(project: string, zone: string, name: string, on = true): AdminInstanceView {
    const record = this.withProxy(project, zone, name);
    record.proxy!.leakForwardedFor(on);
    return view(record);
  }

  /** Back to an empty emulator: every instance and operation gone, faults and counters cleared. */
  async reset(): Promise<void> {
    const records = [...this.state.instances.values()];
    await this.state.lifecycle.shutdown(records);
    for (const r of records) this.state.pool.release(r.address);
    this.state.instances.clear();
    this.state.ops.clear();
    this.state.requestIds.clear();
    this.state.faults.clear();
    this.resetCounters();
  }

  private find(project: string, zone: string, name: string): InstanceRecord {
    const record = this.state.instances.get(instanceKey(project, zone, name));
    if (!record)
      throw new AdminError(
        404,
        'instance_not_found',
        `no instance projects/${project}/zones/${zone}/instances/${name}`,
      );
    return record;
  }

  private withProxy(project: string, zone: string, name: string): InstanceRecord {
    const record = this.find(project, zone, name);
    if (!record.proxy) {
      throw new AdminError(
        409,
        'proxy_not_running',
        `instance ${name} is ${record.status} and runs no proxy`,
      );
    }
    return record;
  }
}

const invalid = (message: string) => new AdminError(400, 'invalid_argument', message);
const isCount = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 0;
const QUOTA_MODES = ['sync', 'async', 'stockout'] as const;
/** GCE's quota metric names: CPUS, N2_CPUS, IN_USE_ADDRESSES, SSD_TOTAL_GB, … */
const QUOTA_METRIC = /^[A-Z][A-Z0-9_]*$/;
