// Builders for the lease domain's unit tests (not a test file itself).
import { emptyStatus, type ProxyResource, ProxySpec } from '../proxy.js';
import type { LeaseEntry } from './model.js';

export const T0 = new Date('2026-01-01T00:00:00Z');
export const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

/** The uid proxy() gives every proxy unless told otherwise. */
export const UID = '00000000-0000-4000-8000-000000000000';

/** An entry of instance `proxyUid` (default UID; null: stored before uids were recorded). */
export function entry(
  leaseId: string,
  expiresInSeconds: number,
  exclusive = false,
  proxyUid: string | null = UID,
): LeaseEntry {
  const e: LeaseEntry = { leaseId, expiresAt: at(expiresInSeconds), exclusive };
  return proxyUid === null ? e : { ...e, proxyUid };
}

export interface ProxyOptions {
  attributes?: Record<string, string>;
  capacity?: number;
  phase?: ProxyResource['status']['phase'];
  latencyMillis?: number | null;
  /** The Healthy condition; default: True when the phase is Ready (what the health engine produces), else none. */
  healthy?: 'True' | 'False' | null;
  /** The Healthy condition's reason (default: Probe). */
  healthReason?: string;
  healthCheckUrl?: string;
  ip?: string | null;
  external?: boolean;
  /** An external endpoint's protocol (default http). */
  protocol?: 'http' | 'socks5';
  deleting?: boolean;
  /** metadata.uid (default UID). */
  uid?: string;
  /** spec.cordoned (default false). */
  cordoned?: boolean;
  /** spec.gatewayPool (default false). */
  gatewayPool?: boolean;
}

export function proxy(name: string, o: ProxyOptions = {}): ProxyResource {
  const common = {
    attributes: o.attributes ?? {},
    capacity: o.capacity ?? 2,
    healthCheck: o.healthCheckUrl ? { url: o.healthCheckUrl } : {},
    ...(o.cordoned === undefined ? {} : { cordoned: o.cordoned }),
    ...(o.gatewayPool === undefined ? {} : { gatewayPool: o.gatewayPool }),
  };
  const spec = ProxySpec.parse(
    o.external
      ? {
          mode: 'external',
          endpoint: { host: 'proxy.example', port: 8080, protocol: o.protocol ?? 'http' },
          ...common,
        }
      : { mode: 'managed', zone: 'us-central1-a', ...common },
  );
  return {
    name,
    uid: o.uid ?? UID,
    generation: 1,
    createdAt: T0,
    deletionRequestedAt: o.deleting ? T0 : null,
    spec,
    status: {
      ...emptyStatus(),
      phase: o.phase ?? 'Ready',
      // An external proxy's status.ip is reconcile's copy of its endpoint host.
      ip: o.ip === undefined ? (o.external ? 'proxy.example' : '10.0.0.1') : o.ip,
      latencyMillis: o.latencyMillis ?? null,
      conditions: healthyOf(o)
        ? [
            {
              type: 'Healthy',
              status: healthyOf(o) ?? 'True',
              reason: o.healthReason ?? 'Probe',
              message: '',
              lastTransitionTime: T0,
              observedGeneration: 1,
            },
          ]
        : [],
    },
  };
}

function healthyOf(o: ProxyOptions): 'True' | 'False' | null {
  if (o.healthy !== undefined) return o.healthy;
  return (o.phase ?? 'Ready') === 'Ready' ? 'True' : null;
}
