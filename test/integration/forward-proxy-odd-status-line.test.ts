// A site's status line that node's parser takes but writeHead refuses — a control byte in the reason
// phrase, a code under 100 — must cost that one request, not the process: every emulated VM's proxy runs
// in `npm start`'s, and an uncaughtException there stops the whole plane (launcher/shutdown-signals.ts).
// Real sockets: a raw TCP "site" sends the bytes as given, the proxy relays them in this process.
import { request } from 'node:http';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import {
  type EchoTarget,
  eventually,
  requestViaProxy,
  startEchoTarget,
} from '../../emulators/forward-proxy/testing.js';

/** Answers each request on a connection with `head` and a 2-byte body, then closes. */
function rawSite(head: string): Promise<{ server: Server; url: string }> {
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => socket.end(Buffer.from(`${head}\r\nContent-Length: 2\r\n\r\nok`, 'latin1')));
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({ server, url: `http://127.0.0.1:${port}/` });
    });
  });
}

let proxy: ForwardProxy;
let addr: { host: string; port: number };
let echo: EchoTarget;
const sites: Server[] = [];

beforeAll(async () => {
  echo = await startEchoTarget();
  proxy = createForwardProxy();
  addr = await proxy.listen();
});

afterAll(async () => {
  await proxy.close();
  await echo.close();
  for (const s of sites) s.close();
});

describe('a status line node parses but will not write', () => {
  it.each([
    ['a control byte in the reason phrase', 200, 'HTTP/1.1 200 O\x01K', 'ok'],
    ['DEL in the reason phrase', 200, 'HTTP/1.1 200 O\x7fK', 'ok'],
    ['a NUL in the reason phrase', 404, 'HTTP/1.1 404 Not\x00Found', 'ok'],
    ['a status code under 100', 502, 'HTTP/1.1 099 Odd', '502 Bad Gateway\n'],
  ])('%s: answered %i, and the proxy keeps serving', async (_, status, head, body) => {
    const site = await rawSite(head);
    sites.push(site.server);
    // Under the proxy's own timeouts: the answer must come from the fix, not from a bound.
    const res = await requestViaProxy(addr, site.url, { timeoutMs: 3_000 });
    expect(res.status).toBe(status);
    expect(res.body).toBe(body);
    const after = await requestViaProxy(addr, `${echo.url}/still-serving`, { timeoutMs: 3_000 });
    expect(after.status).toBe(200);
    await eventually(() => proxy.openSockets() === 0, 'the exchanges to drain');
  });

  it('keeps a valid reason phrase, obs-text included', async () => {
    const site = await rawSite('HTTP/1.1 200 Tr\xe8s bien');
    sites.push(site.server);
    const reason = await new Promise<string>((resolve, reject) => {
      const req = request({ host: addr.host, port: addr.port, path: site.url, agent: false }, (res) => {
        res.resume();
        resolve(res.statusMessage ?? '');
      });
      req.once('error', reject);
      req.end();
    });
    expect(reason).toBe('Tr\xe8s bien');
  });
});
