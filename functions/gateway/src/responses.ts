// Canned answers of the proxy listener. Every refusal says why twice: an `X-Proxyplane-Error` header with
// a stable code (for crawlers that read headers only) and a JSON body {"error": code, ...}.
const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  411: 'Length Required',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

export const ESTABLISHED = Buffer.from('HTTP/1.1 200 Connection established\r\n\r\n', 'latin1');

/** The body fields a refusal also says in a header of its own, on the proxy listener and /v1/fetch alike. */
const DETAIL_HEADERS = [
  ['reason', 'X-Proxyplane-Reason'],
  ['upstreamStatus', 'X-Proxyplane-Upstream-Status'],
  ['socksReply', 'X-Proxyplane-Socks-Reply'],
] as const;

const HEADER_TOKEN = /^[\x21-\x7e]{1,100}$/;

/** The detail headers of a refusal whose JSON body is `detail` (docs/gateway.md § Error codes). */
export function detailHeaders(detail: object): Record<string, string> {
  const headers: Record<string, string> = {};
  const fields = detail as Record<string, unknown>;
  for (const [field, header] of DETAIL_HEADERS) {
    const value = fields[field] === undefined ? '' : String(fields[field]);
    // Codes and numbers only (what every refusal puts there): anything else stays in the body alone.
    if (HEADER_TOKEN.test(value)) headers[header] = value;
  }
  return headers;
}

export function errorResponse(
  status: number,
  code: string,
  detail: Record<string, string | number> = {},
): string {
  const body = JSON.stringify({ error: code, ...detail });
  let extra = '';
  if (status === 407) extra += 'Proxy-Authenticate: Basic realm="proxyplane"\r\n';
  for (const [name, value] of Object.entries(detailHeaders(detail))) extra += `${name}: ${value}\r\n`;
  return (
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\n` +
    `X-Proxyplane-Error: ${code}\r\n${extra}` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}
