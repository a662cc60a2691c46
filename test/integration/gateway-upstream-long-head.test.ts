// An upstream whose answer to the gateway's CONNECT never ends its head (more than 16 KiB without the
// blank line) has sent an answer the gateway cannot read: the proxy listener (a CONNECT, a pinned plain
// GET) and POST /v1/fetch (its own tunnel, upstream-tunnel.ts) give the one code the error table keeps
// for that, 502 `upstream_handshake_failed` (docs/gateway.md § Error codes), at once and without waiting
// for the upstream timeout, and leave no socket behind.
import net, { type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  eventually,
  type GatewayProcess,
  postFetch,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';

const AUTH = basicAuth('crawler', 's3cret');
const UPSTREAM_TIMEOUT_MS = 10_000;
const TARGET = '127.0.0.2:9';

describe('an upstream whose CONNECT answer head is too long', () => {
  const sockets = new Set<Socket>();
  let upstream: net.Server;
  let gw: GatewayProcess;

  beforeAll(async () => {
    // Answers every CONNECT with a status line and then header lines without end (> 16 KiB), then waits.
    upstream = net.createServer((s) => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => {});
      let head = '';
      s.on('data', (chunk: Buffer) => {
        if (head.includes('\r\n\r\n')) return;
        head += chunk.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        s.write('HTTP/1.1 200 Connection established\r\n');
        for (let i = 0; i < 40; i++) s.write(`X-Filler-${i}: ${'f'.repeat(1000)}\r\n`);
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    gw = await startGateway(snapshotFile({ upstreams: [`http://up:pw@127.0.0.1:${port}`] }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: TARGET,
      GATEWAY_UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      GATEWAY_LINGER_MS: '1000',
    });
  });

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    for (const s of sockets) s.destroy();
    await new Promise((r) => (upstream ? upstream.close(r) : r(undefined)));
  });

  it.each([
    ['CONNECT', `CONNECT ${TARGET} HTTP/1.1\r\nProxy-Authorization: ${AUTH}\r\n\r\n`],
    [
      'pinned plain HTTP',
      `GET http://${TARGET}/page HTTP/1.1\r\nHost: ${TARGET}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
    ],
  ])('proxy listener, %s: 502 upstream_handshake_failed', async (_name, request) => {
    const r = await rawExchange(gw.proxyPort, request, { timeoutMs: UPSTREAM_TIMEOUT_MS + 5_000 });
    expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
    expect(r.text).toContain('X-Proxyplane-Error: upstream_handshake_failed');
    expect(r.closedBy).toBe('server');
  });

  it('POST /v1/fetch: the same code', async () => {
    const r = await postFetch(gw.httpPort, { url: `http://${TARGET}/` }, AUTH, UPSTREAM_TIMEOUT_MS + 5_000);
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body)).toEqual({ error: 'upstream_handshake_failed' });
  });

  it('leaves no socket open on either side', async () => {
    const health = await eventually(
      () => gw.health(),
      (h) => h.sockets.upstreams === 0 && h.sockets.proxyClients === 0,
    );
    expect(health.sockets).toMatchObject({ upstreams: 0, proxyClients: 0 });
    expect(
      await eventually(
        async () => sockets.size,
        (n) => n === 0,
      ),
    ).toBe(0);
  });
});
