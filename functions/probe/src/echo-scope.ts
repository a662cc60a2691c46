// What the EGRESS tier can see through its echo URL. A forward proxy adds X-Forwarded-For, Forwarded or Via
// only to a request it forwards itself: an http URL, sent to it in absolute form (proxy-probe.ts). An https
// URL goes through a CONNECT tunnel with TLS inside, where the proxy sees no request to add a header to,
// so the leak checks (evaluateEgress, shared/src/domain/health/egress.ts) never fire and EGRESS checks the
// exit address only. Deployed, the API's own echo is https (Cloud Run redirects http to https): header
// leaks need a plain-http echo of the operator's own (Terraform's `probe_echo_url`, docs/health.md).
import type { ProbeLog } from './probe-pass.js';

/** Whether a proxy can add forwarding headers to the requests the EGRESS tier sends to `echoUrl`. */
export const echoSeesForwardingHeaders = (echoUrl: string): boolean => new URL(echoUrl).protocol === 'http:';

/**
 * Says once, when the function starts, that the header-leak checks are off (an https echo URL). At INFO:
 * it is what the default deployment runs with, not a fault — at WARNING it would stand on every cold start
 * of every deployment that chose not to host an http echo, and say nothing new after the first.
 */
export function logEgressScope(echoUrl: string | null, log: Pick<ProbeLog, 'info'>): void {
  if (echoUrl === null || echoSeesForwardingHeaders(echoUrl)) return;
  log.info(
    'EGRESS checks the exit address only: through an https echo no proxy can add a forwarding header',
    {
      event: 'probe.header_checks_off',
      echoOrigin: new URL(echoUrl).origin,
    },
  );
}
