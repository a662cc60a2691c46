// The InstanceRequest tests hand the gce provider directly: a small VM as reconcile would ask for it,
// named and labelled from the proxy's uid (the GC's orphan rule reads those labels).
import { instanceNameFromUid } from '../../shared/src/domain/instance-name.js';
import type { InstanceRequest } from '../../shared/src/domain/reconcile/types.js';

export function instanceRequest(
  fields: Pick<InstanceRequest, 'uid'> & Partial<InstanceRequest>,
): InstanceRequest {
  return {
    name: instanceNameFromUid(fields.uid),
    proxyName: `p-${fields.uid.slice(0, 8)}`,
    zone: 'us-central1-a',
    machineType: 'e2-small',
    image: 'projects/debian-cloud/global/images/family/debian-12',
    port: 3128,
    protocol: 'http',
    startupScript: '#!/bin/sh\n',
    credentialsSecret: null,
    specHash: '0123456789abcdef',
    ...fields,
  };
}
