// The HTTP listener's answer to a request Node's server refuses before any handler sees it (its
// 'clientError' event): a head past the header timeout, past GATEWAY_MAX_HEADER_BYTES, or unreadable.
// Without a listener Node writes a bare status line — no X-Proxyplane-Error, no JSON body — where every
// other refusal of the gateway, on either listener, says why in both (responses.ts, docs/gateway.md
// § Error codes). What is written, and when, is otherwise Node's own default (_http_server.js
// socketOnError): nothing once an answer's head has gone out on the connection, then the socket destroyed.
import type { Socket } from 'node:net';
import { errorResponse } from './responses.js';

/** Node's own field on a server socket: the answer under way on it. */
type ServerSocket = Socket & { _httpMessage?: { headersSent: boolean } | null };

/**
 * Status and code for Node's error. Its timeout is the header timeout and also its request timeout (a body
 * not in 5 minutes, or the header timeout if longer, after the request began): both are `header_timeout`,
 * the client's request not in on time.
 */
function refusal(code: string | undefined): [number, string] {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'header_timeout'];
  if (code === 'HPE_HEADER_OVERFLOW') return [431, 'header_too_large'];
  // A chunk's extensions past Node's 16 KiB: Node's 413, and the body limit's code on /v1/fetch.
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return [413, 'body_too_large'];
  return [400, 'bad_request'];
}

/** For http.Server's 'clientError' event. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  const s = socket as ServerSocket;
  if (s.writable && !s._httpMessage?.headersSent) s.write(errorResponse(...refusal(err.code)), 'latin1');
  s.destroy();
}
