// The seed's computePhase (status.go): one summary word derived from the conditions, so it can never
// disagree with them. Called by patchStatusIfChanged on every pass.
import {
  ConditionType,
  type Phase,
  ProvisionedReason,
  type ProxyResource,
  type ProxyStatus,
} from './proxy.js';

export function computePhase(proxy: Pick<ProxyResource, 'deletionRequestedAt'>, status: ProxyStatus): Phase {
  if (proxy.deletionRequestedAt) return 'Deleting';
  const provisioned = status.conditions.find((c) => c.type === ConditionType.Provisioned);
  if (provisioned?.status === 'False' && provisioned.reason === ProvisionedReason.PermanentError)
    return 'Failed';
  if (provisioned?.status === 'True') {
    const healthy = status.conditions.find((c) => c.type === ConditionType.Healthy);
    if (healthy?.status === 'True') return 'Ready';
    if (healthy?.status === 'False') return 'Unhealthy';
    return 'Provisioned';
  }
  return status.providerId ? 'Provisioning' : 'Pending';
}
