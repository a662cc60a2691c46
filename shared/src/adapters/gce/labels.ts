// The names an instance carries on GCE: labels as ownership proof (GC's orphan rule, seed §8), the
// network tag the firewall rule targets, and the metadata keys the VM's startup reads. The compute
// emulator (emulators/compute/instance-spec.ts) reads the same metadata keys.

export const LABEL_MANAGED_BY = 'managed-by';
export const MANAGED_BY = 'proxyplane';
export const LABEL_UID = 'proxyplane-uid';
export const LABEL_NAME = 'proxyplane-name';
/** The spec hash the instance was built from (reconcile replaces an instance whose label disagrees). */
export const LABEL_SPEC_HASH = 'proxyplane-spec-hash';

/** terraform/ opens the proxy port to instances with this tag. */
export const NETWORK_TAG = 'proxyplane-proxy';

export const METADATA_STARTUP_SCRIPT = 'startup-script';
export const METADATA_PROXY_PORT = 'proxyplane-proxy-port';
/** A Secret Manager version resource name: a reference the VM resolves, never the credentials themselves. */
export const METADATA_CREDENTIALS_SECRET = 'proxyplane-credentials-secret';

/** The aggregatedList filter that finds every instance this plane owns. */
export const OWNED_FILTER = `labels.${LABEL_MANAGED_BY} = "${MANAGED_BY}"`;
