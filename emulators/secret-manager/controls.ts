// Test controls the real service has no API for: IAM denials per secret (so callers can exercise
// PERMISSION_DENIED) and injected failures (so they can exercise retries). Set through the admin routes;
// per-secret IAM (a missing secret is PERMISSION_DENIED) through the emulator's `perSecretIam` option.
import { ApiError, type Canonical, invalidArgument, permissionDenied } from './api-error.js';

export const PERMISSIONS = [
  'secretmanager.secrets.create',
  'secretmanager.secrets.get',
  'secretmanager.secrets.update',
  'secretmanager.secrets.delete',
  'secretmanager.versions.add',
  'secretmanager.versions.get',
  'secretmanager.versions.list',
  'secretmanager.versions.access',
  'secretmanager.versions.enable',
  'secretmanager.versions.disable',
  'secretmanager.versions.destroy',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const FAULT_STATUSES = ['UNAVAILABLE', 'INTERNAL', 'DEADLINE_EXCEEDED', 'RESOURCE_EXHAUSTED'] as const;
type FaultStatus = (typeof FAULT_STATUSES)[number];

interface Fault {
  status: FaultStatus;
  remaining: number;
  secret: string | undefined;
}

export class Controls {
  /** `project/secret` → denied permissions. */
  private readonly denials = new Map<string, Set<Permission>>();
  private readonly faults = new Map<string, Fault[]>();

  /**
   * `perSecretIam`: the caller's roles are granted on each secret (terraform/secrets.tf), none on the
   * project, so a secret that does not exist — deleted, or never created — grants nothing, and every call
   * naming it is PERMISSION_DENIED ("or it may not exist"), as on GCP; creating one stays allowed.
   */
  constructor(private readonly perSecretIam = false) {}

  deny(project: string, secret: string, permissions: readonly string[]): void {
    const unknown = permissions.filter((p) => !(PERMISSIONS as readonly string[]).includes(p));
    if (unknown.length > 0) throw invalidArgument(`unknown permissions: ${unknown.join(', ')}`);
    const chosen = (permissions.length > 0 ? permissions : PERMISSIONS) as readonly Permission[];
    this.denials.set(`${project}/${secret}`, new Set(chosen));
  }

  allow(project: string, secret: string): void {
    this.denials.delete(`${project}/${secret}`);
  }

  /**
   * Throws PERMISSION_DENIED when `permission` is denied on the secret, or (perSecretIam) the secret does
   * not exist to carry a grant; checked before existence, like IAM.
   */
  authorize(
    project: string,
    secret: string,
    permission: Permission,
    resource: string,
    secretExists: () => boolean,
  ): void {
    if (this.denials.get(`${project}/${secret}`)?.has(permission))
      throw permissionDenied(permission, resource);
    if (this.perSecretIam && secret && permission !== 'secretmanager.secrets.create' && !secretExists())
      throw permissionDenied(permission, resource);
  }

  injectFault(project: string, status: string, count: number, secret: string | undefined): void {
    if (!(FAULT_STATUSES as readonly string[]).includes(status)) {
      throw invalidArgument(`status must be one of ${FAULT_STATUSES.join(', ')}`);
    }
    if (!Number.isInteger(count) || count < 1 || count > 1000) throw invalidArgument('count must be 1..1000');
    const list = this.faults.get(project) ?? [];
    list.push({ status: status as FaultStatus, remaining: count, secret });
    this.faults.set(project, list);
  }

  /** Consumes one injected failure matching the request, if any. */
  takeFault(project: string, secret: string | undefined): void {
    const list = this.faults.get(project);
    const fault = list?.find((f) => f.secret === undefined || f.secret === secret);
    if (!list || !fault) return;
    fault.remaining -= 1;
    if (fault.remaining === 0) list.splice(list.indexOf(fault), 1);
    throw new ApiError(fault.status as Canonical, `Injected ${fault.status} (proxyplane emulator fault).`);
  }

  reset(project?: string): void {
    if (project === undefined) {
      this.denials.clear();
      this.faults.clear();
      return;
    }
    this.faults.delete(project);
    for (const key of [...this.denials.keys()]) if (key.startsWith(`${project}/`)) this.denials.delete(key);
  }
}
