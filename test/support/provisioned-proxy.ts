// A proxy document as reconcile leaves it once its instance runs (managed: reason Created, with the
// providerId; external: reason ExternalEndpoint) and before the probe's first verdict. The time
// Provisioned turned True names the incarnation the probe keys its counters by
// (shared/src/domain/health/instance-key.ts).
import { emptyStatus, type ProxyResource, type ProxySpec } from '../../shared/src/domain/proxy.js';

export function provisionedProxy(p: {
  name: string;
  uid: string;
  spec: ProxySpec;
  now: Date;
  ip: string | null;
  providerId?: string;
}): ProxyResource {
  const managed = p.spec.mode === 'managed';
  return {
    name: p.name,
    uid: p.uid,
    generation: 1,
    createdAt: p.now,
    deletionRequestedAt: null,
    spec: p.spec,
    status: {
      ...emptyStatus(),
      phase: 'Provisioned',
      observedGeneration: 1,
      conditions: [
        {
          type: 'Provisioned',
          status: 'True',
          reason: managed ? 'Created' : 'ExternalEndpoint',
          message: '',
          lastTransitionTime: p.now,
          observedGeneration: 1,
        },
      ],
      ip: p.ip,
      ...(managed ? { providerId: p.providerId ?? null, specHash: 'h' } : {}),
    },
  };
}
