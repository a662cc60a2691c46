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

export function errorResponse(
  status: number,
  code: string,
  detail: Record<string, string | number> = {},
): string {
  const body = JSON.stringify({ error: code, ...detail });
  let extra = '';
  if (status === 407) extra += 'Proxy-Authenticate: Basic realm="proxyplane"\r\n';
  if (detail.reason !== undefined) extra += `X-Proxyplane-Reason: ${detail.reason}\r\n`;
  if (detail.upstreamStatus !== undefined)
    extra += `X-Proxyplane-Upstream-Status: ${detail.upstreamStatus}\r\n`;
  if (detail.socksReply !== undefined) extra += `X-Proxyplane-Socks-Reply: ${detail.socksReply}\r\n`;
  return (
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\n` +
    `X-Proxyplane-Error: ${code}\r\n${extra}` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}
