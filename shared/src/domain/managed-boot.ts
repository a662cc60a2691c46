// A managed proxy boots from cloud-init: its own (`spec.cloudInit`) or the default one, which installs the
// proxy with the credentials `spec.credentialsRef` names. A managed spec with neither can never boot:
// reconcile latches it Failed at its first pass ("the default cloud-init needs spec.credentialsRef",
// functions/reconcile/src/cloud-init.ts). The admin API refuses such a spec with a 400 instead. Only a
// spec that would newly lack both counts: an edit of a stored proxy that already lacked them (written
// before this check) is not refused for it (endpoint-host.ts and managed-ports.ts do the same).
import type { ProxySpec } from './proxy.js';

/** Whether `next` is a managed spec that could not boot for want of credentials or its own cloud-init. */
export function lacksBootSource(next: ProxySpec, current?: ProxySpec): boolean {
  if (next.mode !== 'managed' || next.credentialsRef || next.cloudInit) return false;
  return !(current?.mode === 'managed' && !current.credentialsRef && !current.cloudInit);
}
