// A plain-HTTP request whose method is CONNECT in another case ("connect http://host/path"), and a
// /v1/fetch asking for method CONNECT: Node's HTTP client upper-cases a method, so in absolute form (an
// upstream marked filtersDestinations) either reached the upstream as `CONNECT http://host/path` with
// the gateway's credentials — a tunnel to whatever the upstream's parser makes of that (squid: host
// "http", port 443), never the address the guard checked. Both are refused at the gateway; the upstream
// here records every byte it gets, and must see none of them.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  postFetch,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';

const AUTH = basicAuth('crawler', 's3cret');

describe('a CONNECT spelt otherwise never reaches an upstream', () => {
  let gw: GatewayProcess;
  let upstream: net.Server;
  let target: http.Server;
  let targetPort: number;
  /** Every request head the upstream received, in order. */
  const heads: string[] = [];

  beforeAll(async () => {
    target = http.createServer((req, res) => res.end(`target saw ${req.method} ${req.url}`));
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetPort = (target.address() as AddressInfo).port;
    // A forward proxy that answers every absolute-form request itself (200 "ok") and records its head; a
    // CONNECT it would grant, as a permissive upstream does.
    upstream = net.createServer((s) => {
      let buf = '';
      s.on('error', () => {});
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
          const head = buf.slice(0, end);
          buf = buf.slice(end + 4);
          heads.push(head);
          s.write(
            head.startsWith('CONNECT ')
              ? 'HTTP/1.1 200 Connection established\r\n\r\n'
              : 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
          );
        }
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    gw = await startGateway(
      snapshotFile({
        upstreams: [`http://up:up-pass@127.0.0.1:${port}`],
        routing: [{ name: 'all', match: { hosts: ['*'] }, selector: { pool: 'p' }, policy: 'round-robin' }],
        attributes: () => ({ pool: 'p' }),
        filtersDestinations: () => true,
      }),
      { GATEWAY_CLIENT_USERS: 'crawler:s3cret', GATEWAY_SSRF_ALLOW: `127.0.0.1:${targetPort}` },
    );
  });

  afterAll(async () => {
    await gw?.stop();
    await new Promise((r) => upstream?.close(r));
    await new Promise((r) => target?.close(r));
  });

  const authority = () => `127.0.0.1:${targetPort}`;

  it('the upstream answers an ordinary absolute-form GET (the path under test is live)', async () => {
    heads.length = 0;
    const r = await rawExchange(
      gw.proxyPort,
      `GET http://${authority()}/x HTTP/1.1\r\nHost: ${authority()}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
    );
    expect(r.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(heads.map((h) => h.split('\r\n')[0])).toEqual([`GET http://${authority()}/x HTTP/1.1`]);
  });

  it.each(['connect', 'Connect', 'cONNECT'])(
    'proxy listener: "%s http://…" is a 400, sent nowhere',
    async (m) => {
      heads.length = 0;
      const r = await rawExchange(
        gw.proxyPort,
        `${m} http://${authority()}/x HTTP/1.1\r\nHost: ${authority()}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
      );
      expect(r.text).toMatch(/^HTTP\/1\.1 400 /);
      expect(r.text).toContain('X-Proxyplane-Error: bad_request');
      expect(heads).toEqual([]);
    },
  );

  it.each(['CONNECT', 'connect'])('POST /v1/fetch with method %s is a 400, sent nowhere', async (method) => {
    heads.length = 0;
    const r = await postFetch(gw.httpPort, { url: `http://${authority()}/x`, method }, AUTH, 5_000);
    expect(r.status).toBe(400);
    expect(r.headers['x-proxyplane-error']).toBe('bad_request');
    expect(heads).toEqual([]);
  });
});
