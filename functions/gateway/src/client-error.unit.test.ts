// What a client sees when Node's HTTP server refuses its request before any handler (answerClientError):
// the gateway's X-Proxyplane-Error and JSON body, as on every other refusal, and the connection closed.
// A real server on loopback with short timeouts, the raw bytes read back.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { answerClientError } from './client-error.js';

let server: http.Server;
let port: number;

beforeAll(async () => {
  server = http.createServer(
    { headersTimeout: 300, requestTimeout: 600, connectionsCheckingInterval: 50, maxHeaderSize: 1024 },
    (req) => req.resume(), // reads a body, never answers
  );
  server.on('clientError', answerClientError);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** Writes `bytes` and stalls; what came back before the server closed (or 'timeout'). */
function exchange(bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => {
      s.destroy();
      resolve('timeout');
    }, 5_000);
    s.setEncoding('latin1');
    s.on('data', (d: string) => {
      got += d;
    });
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
    s.write(bytes);
  });
}

it.each([
  ['half a head, then nothing', 408, 'header_timeout', 'POST /v1/fetch HTTP/1.1\r\nHost: gw\r\n'],
  [
    'a head, then half its body',
    408,
    'header_timeout', // Node's request timeout: the request not in on time
    'POST /v1/fetch HTTP/1.1\r\nHost: gw\r\nContent-Length: 10\r\n\r\n{"u',
  ],
  [
    'a head over the limit',
    431,
    'header_too_large',
    `GET / HTTP/1.1\r\nHost: gw\r\nX-Big: ${'a'.repeat(2048)}\r\n\r\n`,
  ],
  [
    "a chunk's extensions over Node's limit",
    413,
    'body_too_large',
    `POST /v1/fetch HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n5;${'a'.repeat(20_000)}\r\n`,
  ],
  ['a head that is not HTTP', 400, 'bad_request', 'HELLO THERE\r\n\r\n'],
])('%s: %i with X-Proxyplane-Error %s and its JSON body, then closed', async (_, status, code, bytes) => {
  const text = await exchange(bytes);
  const [head, body] = text.split('\r\n\r\n');
  expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
  expect(head).toContain(`\r\nX-Proxyplane-Error: ${code}\r\n`);
  expect(head).toContain('\r\nConnection: close');
  expect(JSON.parse(body!)).toEqual({ error: code });
});
