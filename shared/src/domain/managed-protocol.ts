// A managed proxy's VM runs the HTTP proxy the default cloud-init installs (cloud-init/), listening on
// spec.port: nothing on it would speak SOCKS5, so a managed spec naming another protocol would make a VM
// that fails every probe and every crawler. The admin API refuses such a spec with a 400 instead (as it
// does a managed spec that could never boot, managed-boot.ts). No stored managed proxy can have another
// protocol (the schema allowed only `http` before SOCKS5 external endpoints), so nothing is grandfathered.
import type { ProxyProtocol, ProxySpec } from './proxy.js';

/** The protocol `spec` names when it is a managed spec the plane cannot serve; null when it can. */
export function unsupportedManagedProtocol(spec: ProxySpec): ProxyProtocol | null {
  return spec.mode === 'managed' && spec.protocol !== 'http' ? spec.protocol : null;
}
