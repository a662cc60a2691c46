// The probe function's own documents (`health/{proxy}`): it is their only writer, and it writes one only
// when the state changed. Reconcile reads them to fold the verdict into status.
import type { ProxyHealthState } from '../domain/health/proxy-health.js';

export interface HealthStore {
  getMany(names: string[]): Promise<Map<string, ProxyHealthState>>;
  get(name: string): Promise<ProxyHealthState | null>;
  writeMany(states: ProxyHealthState[]): Promise<void>;
  deleteMany(names: string[]): Promise<void>;
  listNames(): Promise<string[]>;
}
