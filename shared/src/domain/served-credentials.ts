// Which credentials a client must present to a proxy. A managed instance reads its credentials version
// once, at boot (the default cloud-init), so after a rotation the instances still waiting for their turn
// (RECONCILE_MAX_REPLACING, docs/operations.md § A rolling replacement) serve the version they booted
// with, not the secret's newest. Reconcile records that version in status.servedCredentials, and leases,
// the probe and the snapshots hand it out: a rotation rolls through the fleet instead of taking every
// proxy that names the secret down for a boot together. Disabling the old version revokes it: reconcile
// then replaces the instances that still serve it at once (managed.ts keepsAccess).
import type { ProxyResource, SecretRef } from './proxy.js';

/** The reference whose value the proxy accepts now: the version its instance serves, else the spec's. */
export const clientCredentialsRef = (p: Pick<ProxyResource, 'spec' | 'status'>): SecretRef | undefined =>
  p.status.servedCredentials ?? p.spec.credentialsRef;

const VERSION_NAME = /^projects\/[^/]+\/secrets\/([A-Za-z0-9_-]{1,255})\/versions\/([1-9][0-9]{0,9})$/;

/** `projects/p/secrets/s/versions/7` → `{secret: 's', version: '7'}`; undefined for anything else. */
export function servedRefOf(versionName: string | null | undefined): SecretRef | undefined {
  const m = versionName ? VERSION_NAME.exec(versionName) : null;
  return m ? { secret: m[1]!, version: m[2]! } : undefined;
}
