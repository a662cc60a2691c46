// The operator seed's Secret watch (§1, proxiesForSecret): which proxies does a secret feed?
// Both the cloud-init secret and the proxy credentials count: rotating either re-provisions the proxy
// (reconcile hashes the resolved version name, so a new version changes the spec hash).
import type { ProxyResource, SecretRef } from './proxy.js';

export function secretRefs(p: ProxyResource): SecretRef[] {
  const out: SecretRef[] = [];
  if (p.spec.credentialsRef) out.push(p.spec.credentialsRef);
  // The version its instance still serves mid-rotation: disabling it revokes it (managed.ts keepsAccess).
  if (p.status.servedCredentials) out.push(p.status.servedCredentials);
  if (p.spec.mode === 'managed' && p.spec.cloudInit && 'secretRef' in p.spec.cloudInit) {
    out.push(p.spec.cloudInit.secretRef);
  }
  return out;
}

export const referencedSecrets = (p: ProxyResource): string[] => secretRefs(p).map((r) => r.secret);

/** What changed in Secret Manager, as far as references care. */
export interface SecretChange {
  secret: string;
  /** The version the change is about; null when it concerns the whole secret or is not known. */
  version: string | null;
}

/** Would a reference resolve to something else (or fail) after this change? */
export function refAffected(ref: SecretRef, change: SecretChange): boolean {
  if (ref.secret !== change.secret) return false;
  if (ref.version === 'latest' || change.version === null) return true;
  // A pinned version moves only when that very version is added (a reference pinned before the version
  // existed could not be read until now), enabled, disabled or destroyed.
  return ref.version === change.version;
}

/**
 * Names of the proxies to re-enqueue after a secret change. A proxy being deleted is left out: its
 * reconcile deletes the instance whatever the secret holds.
 */
export function proxiesForSecretChange(proxies: readonly ProxyResource[], change: SecretChange): string[] {
  return proxies
    .filter((p) => !p.deletionRequestedAt && secretRefs(p).some((r) => refAffected(r, change)))
    .map((p) => p.name);
}

/** Every proxy that references `secretId` at all (any version), deletions excepted. */
export const proxiesForSecret = (proxies: readonly ProxyResource[], secretId: string): string[] =>
  proxiesForSecretChange(proxies, { secret: secretId, version: null });
