// Responses written straight onto a raw socket: after a CONNECT the HTTP machinery no longer owns the
// socket, so these are plain bytes. Each closes the connection (a refused tunnel is not reused).
import type { Duplex } from 'node:stream';

export const REALM = 'proxyplane';

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  504: 'Gateway Timeout',
};

export function rawResponse(status: number, extraHeaders = ''): string {
  const text = STATUS_TEXT[status] ?? 'Error';
  const body = `${status} ${text}\n`;
  return (
    `HTTP/1.1 ${status} ${text}\r\n${extraHeaders}Content-Type: text/plain\r\n` +
    `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`
  );
}

export const PROXY_AUTHENTICATE = `Basic realm="${REALM}"`;

/** Write a final response and close our side; the socket is destroyed once flushed. */
export function refuse(socket: Duplex, status: number): void {
  if (socket.destroyed) return;
  const extra = status === 407 ? `Proxy-Authenticate: ${PROXY_AUTHENTICATE}\r\n` : '';
  socket.end(rawResponse(status, extra));
  socket.once('finish', () => socket.destroy());
}
