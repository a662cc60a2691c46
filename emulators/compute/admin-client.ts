// A typed client of the emulator's /admin/… routes (README.md), for tests and the local plane when
// the emulator runs in another process. Non-2xx answers throw AdminCallError with the stable code.
import type { AdminInstanceView } from './admin.js';
import type { ApiOperation, ErrorFaultInput, QuotaFaultInput } from './faults.js';

export class AdminCallError extends Error {
  readonly kind = 'admin_call';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class ComputeAdminClient {
  /** `baseUrl` is the emulator's URL, e.g. http://127.0.0.1:18190 */
  constructor(private readonly baseUrl: string) {}

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.baseUrl}/admin${path}`, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const json = (await res.json()) as T & { error?: string; message?: string };
    if (!res.ok)
      throw new AdminCallError(res.status, json.error ?? 'unknown', json.message ?? res.statusText);
    return json;
  }

  private instancePath(project: string, zone: string, name: string): string {
    return `/projects/${encodeURIComponent(project)}/zones/${encodeURIComponent(zone)}/instances/${encodeURIComponent(name)}`;
  }

  healthz = () => this.call<{ ok: boolean }>('GET', '/healthz');

  instances = async (filter: { project?: string; zone?: string; status?: string } = {}) => {
    const q = new URLSearchParams(
      Object.entries(filter).filter((e): e is [string, string] => e[1] !== undefined),
    );
    return (await this.call<{ instances: AdminInstanceView[] }>('GET', `/instances?${q}`)).instances;
  };

  instance = (project: string, zone: string, name: string) =>
    this.call<AdminInstanceView>('GET', this.instancePath(project, zone, name));

  counters = () => this.call<Record<ApiOperation | 'total', number>>('GET', '/counters');
  resetCounters = () => this.call<Record<ApiOperation | 'total', number>>('POST', '/counters/reset');
  faults = () => this.call<Record<string, unknown>>('GET', '/faults');
  clearFaults = () => this.call<Record<string, unknown>>('DELETE', '/faults');
  injectQuota = (input: QuotaFaultInput) =>
    this.call<Record<string, unknown>>('POST', '/faults/quota', input);
  injectErrors = (input: ErrorFaultInput) =>
    this.call<Record<string, unknown>>('POST', '/faults/errors', input);
  setBootDelay = (bootDelayMs: number, nextInserts?: number) =>
    this.call<Record<string, unknown>>('POST', '/faults/boot-delay', { bootDelayMs, nextInserts });
  setUnreachableZones = (zones: string[]) =>
    this.call<Record<string, unknown>>('POST', '/faults/unreachable-zones', { zones });
  reset = () => this.call<{ ok: boolean }>('POST', '/reset');

  stopInstance = (project: string, zone: string, name: string) =>
    this.call<{ operation: string }>('POST', `${this.instancePath(project, zone, name)}/stop`);
  preemptInstance = (project: string, zone: string, name: string) =>
    this.call<{ operation: string }>('POST', `${this.instancePath(project, zone, name)}/preempt`);
  backdate = (
    project: string,
    zone: string,
    name: string,
    to: { creationTimestamp?: string; ageMs?: number },
  ) => this.call<AdminInstanceView>('POST', `${this.instancePath(project, zone, name)}/backdate`, to);
  killProxy = (project: string, zone: string, name: string) =>
    this.call<AdminInstanceView>('POST', `${this.instancePath(project, zone, name)}/proxy/kill`);
  reviveProxy = (project: string, zone: string, name: string) =>
    this.call<AdminInstanceView>('POST', `${this.instancePath(project, zone, name)}/proxy/revive`);
  hangProxy = (project: string, zone: string, name: string, on = true) =>
    this.call<AdminInstanceView>('POST', `${this.instancePath(project, zone, name)}/proxy/hang`, { on });
  leakProxy = (project: string, zone: string, name: string, on = true) =>
    this.call<AdminInstanceView>('POST', `${this.instancePath(project, zone, name)}/proxy/leak`, { on });
}
