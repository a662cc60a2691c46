// The EGRESS tier's verdict on what the echo endpoint saw (gateway contract §6: egress identity and
// anonymity). A proxy fails when the target sees another exit address than the proxy's own — or, for one
// whose exit is elsewhere by design (`healthCheck.exitIp: any`), the prober's own address —, or when it
// forwards headers that reveal the caller behind it.

export interface EchoObservation {
  /** The address the echo endpoint attributes the request to. */
  exitIp: string;
  /** Headers as the echo endpoint received them, lower-cased names. */
  headers: Record<string, string>;
}

export type EgressProblem =
  | 'exit_ip_mismatch'
  | 'exit_ip_is_caller'
  | 'forwarded_header_leak'
  | 'via_header_leak'
  | 'bad_echo_response';

const ipv4Mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;
export const normalizeIp = (ip: string): string => ip.trim().replace(ipv4Mapped, '$1').toLowerCase();

/** `proxy`: the exit must be the proxy's own address; `any`: anything but the prober's own. */
export type ExitIpRule = 'proxy' | 'any';

/**
 * @param proxyIp   the proxy's own address (status.ip): its traffic must leave from there, under `proxy`
 * @param callerIps the prober's own addresses: any of them in a forwarding header is a leak, and under
 *                  `any` as the exit address too
 */
export function evaluateEgress(
  echo: EchoObservation,
  proxyIp: string,
  callerIps: string[],
  exitIp: ExitIpRule = 'proxy',
): EgressProblem | null {
  const callers = callerIps.map(normalizeIp);
  const leaks = (value: string | undefined) =>
    value !== undefined && callers.some((c) => namesAddress(value.toLowerCase(), c));
  if (leaks(echo.headers['x-forwarded-for']) || leaks(echo.headers.forwarded)) return 'forwarded_header_leak';
  if (leaks(echo.headers.via)) return 'via_header_leak';
  const exit = normalizeIp(echo.exitIp);
  if (exitIp === 'any') return callers.includes(exit) ? 'exit_ip_is_caller' : null;
  if (exit !== normalizeIp(proxyIp)) return 'exit_ip_mismatch';
  return null;
}

/**
 * Whether a header value names `ip` itself, not merely holds its characters: 34.1.2.3 is not in
 * "34.1.2.30" or a proxy's own "1.1 134.1.2.3:3128". The address may stand with a port ("1.2.3.4:80",
 * "[2001:db8::1]:80"), quoted, among others, or IPv4-mapped ("::ffff:1.2.3.4"). `value` lower-cased.
 */
function namesAddress(value: string, ip: string): boolean {
  // What may not touch the address on either side: more of an address. An IPv4 one may follow "::ffff:"
  // and precede ":port"; an IPv6 one stands alone (a port needs brackets).
  const edge = ip.includes(':') ? '[0-9a-f:.]' : '[0-9.]';
  const escaped = ip.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<!${edge})${escaped}(?!${edge})`).test(value);
}

export function parseEchoBody(body: string | null): EchoObservation | null {
  if (!body) return null;
  try {
    const v = JSON.parse(body) as { ip?: unknown; headers?: unknown };
    if (typeof v.ip !== 'string' || typeof v.headers !== 'object' || v.headers === null) return null;
    const headers: Record<string, string> = {};
    for (const [k, val] of Object.entries(v.headers as Record<string, unknown>)) {
      if (typeof val === 'string') headers[k.toLowerCase()] = val;
    }
    return { exitIp: v.ip, headers };
  } catch {
    return null;
  }
}
