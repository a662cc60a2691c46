// /v1/fetch requests pipelined on one connection run one at a time. Node emits pipelined requests at once,
// each with its response queued behind the earlier ones: one authenticated connection held as many
// upstream slots as it pipelined requests (50 in one write, load.active 50), for answers that leave in
// order anyway. A real gateway process, the emulator's forward proxy as its upstream, and a target that
// answers after a delay and counts the requests it holds at once.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, type GatewayProcess, startGateway } from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';

const AUTH = basicAuth('crawler', 's3cret');
const DELAY_MS = 150;

/** A target answering each request DELAY_MS after it came, with its path as X-Seq; `held.max` is the most at once. */
function slowTarget() {
  const held = { now: 0, max: 0 };
  const server = http.createServer((req, res) => {
    held.now++;
    held.max = Math.max(held.max, held.now);
    req.resume();
    setTimeout(() => {
      held.now--;
      res.writeHead(200, { 'x-seq': req.url!.slice(1), 'content-length': 2 });
      res.end('ok');
    }, DELAY_MS);
  });
  return {
    held,
    listen: () =>
      new Promise<number>((r) =>
        server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)),
      ),
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

/** `n` fetches of /0 … /n-1 pipelined in one write; resolves with everything read once the gateway closed. */
function pipelined(port: number, target: number, n: number, first = 0): Promise<string> {
  const s = net.connect({ port, host: '127.0.0.1' });
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  s.on('error', () => {});
  let bytes = '';
  for (let i = first; i < first + n; i++) {
    const body = JSON.stringify({ url: `http://127.0.0.1:${target}/${i}` });
    const close = i === first + n - 1 ? 'Connection: close\r\n' : '';
    bytes +=
      `POST /v1/fetch HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nProxy-Authorization: ${AUTH}\r\n` +
      `${close}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  }
  s.write(bytes);
  return new Promise((r) => s.once('close', () => r(Buffer.concat(chunks).toString('latin1'))));
}

describe('/v1/fetch pipelined on one connection', () => {
  const target = slowTarget();
  let targetPort: number;
  let upstream: ForwardProxy;
  let gw: GatewayProcess;

  beforeAll(async () => {
    targetPort = await target.listen();
    upstream = createForwardProxy({ credentials: 'up:up-pass' });
    const up = `http://up:up-pass@127.0.0.1:${(await upstream.listen()).port}`;
    gw = await startGateway(snapshotFile({ upstreams: [up] }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${targetPort}`,
    });
  });

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await upstream?.close();
    await target.close();
  });

  it('holds one upstream slot at a time, and answers every request in order', async () => {
    target.held.max = 0;
    let active = 0;
    let polling = true;
    const poll = (async () => {
      while (polling) {
        active = Math.max(active, (await gw.health()).load.active);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const text = await pipelined(gw.httpPort, targetPort, 10);
    polling = false;
    await poll;
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
    expect(statuses).toEqual(Array(10).fill('200'));
    const order = [...text.matchAll(/\r\nx-seq: (\d+)\r\n/gi)].map((m) => Number(m[1]));
    expect(order).toEqual([...Array(10).keys()]);
    expect(target.held.max).toBe(1);
    expect(active).toBeLessThanOrEqual(1);
  });

  it('is a bound per connection: two connections fetch side by side', async () => {
    target.held.max = 0;
    const [a, b] = await Promise.all([
      pipelined(gw.httpPort, targetPort, 3, 0),
      pipelined(gw.httpPort, targetPort, 3, 3),
    ]);
    expect([...a.matchAll(/\r\nx-seq: (\d+)\r\n/gi)].map((m) => Number(m[1]))).toEqual([0, 1, 2]);
    expect([...b.matchAll(/\r\nx-seq: (\d+)\r\n/gi)].map((m) => Number(m[1]))).toEqual([3, 4, 5]);
    expect(target.held.max).toBe(2);
  });
});
