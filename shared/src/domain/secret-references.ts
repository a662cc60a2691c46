// The operator seed's Secret watch (§1, proxiesForSecret): which proxies does a secret feed?
// Both the cloud-init secret and the proxy credentials count: rotating either re-provisions the proxy.
import type { ProxyResource } from './proxy.js';

export function referencedSecrets(p: ProxyResource): string[] {
  const out: string[] = [];
  if (p.spec.credentialsRef) out.push(p.spec.credentialsRef.secret);
  if (p.spec.mode === 'managed' && p.spec.cloudInit && 'secretRef' in p.spec.cloudInit) {
    out.push(p.spec.cloudInit.secretRef.secret);
  }
  return out;
}

export function proxiesForSecret(proxies: ProxyResource[], secretId: string): string[] {
  return proxies
    .filter((p) => !p.deletionRequestedAt && referencedSecrets(p).includes(secretId))
    .map((p) => p.name);
}
