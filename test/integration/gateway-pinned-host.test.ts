// Pinned plain HTTP writes the request in the same segment as its upstream CONNECT (a round trip less).
// An upstream that refuses the CONNECT but reads on may take those bytes as a request of its own; one
// that routes origin-form requests by Host would then fetch whatever the client's Host named — in the
// upstream's own network, an address the guard never saw (`Host: 169.254.169.254`) — or, for a target
// named by a DNS name, the same name resolved again by the upstream to whatever it answers by then
// (rebinding). The request now rides with the CONNECT only when the target is an address and its Host
// names it; otherwise it waits for the 200.
// The upstream here records every byte it gets, refuses or grants CONNECT on demand, and answers an
// origin-form request itself with the Host it was given, as such a proxy would.
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { pollUntil } from '../support/poll.js';

const AUTH = basicAuth('crawler', 's3cret');
/** Never dialled: the upstream below plays the target once it granted a CONNECT. */
const TARGET = '127.0.0.1:9';
/** The same, named: the upstream could resolve the name itself. */
const NAMED_TARGET = 'localhost:9';

describe('pinned plain HTTP: what rides with the upstream CONNECT', () => {
  let gw: GatewayProcess;
  let upstream: net.Server;
  let grant = false;
  /** Per upstream connection: every byte received, and whether it has closed. */
  const conns: { bytes: string; closed: boolean }[] = [];

  beforeAll(async () => {
    upstream = net.createServer((s) => {
      const c = { bytes: '', closed: false };
      conns.push(c);
      let buf = '';
      s.on('error', () => {});
      s.on('close', () => {
        c.closed = true;
      });
      s.on('data', (d: Buffer) => {
        c.bytes += d.toString('latin1');
        buf += d.toString('latin1');
        for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
          const head = buf.slice(0, end);
          buf = buf.slice(end + 4);
          if (head.startsWith('CONNECT ')) {
            s.write(
              grant
                ? 'HTTP/1.1 200 Connection established\r\n\r\n'
                : 'HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n',
            );
            continue;
          }
          const body = `fetched ${/\r\nhost: *([^\r]*)/i.exec(head)?.[1]}`;
          s.end(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
        }
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    gw = await startGateway(snapshotFile({ upstreams: [`http://up:up-pass@127.0.0.1:${port}`] }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `${TARGET},${NAMED_TARGET}`,
      GATEWAY_PLAIN_HTTP: 'pinned',
    });
  });

  afterAll(async () => {
    await gw?.stop();
    await new Promise((r) => upstream?.close(r));
  });

  /** A GET of http://<target>/x with this Host field; the client's answer and the upstream's bytes. */
  async function get(host: string, target = TARGET) {
    const before = conns.length;
    const r = await rawExchange(
      gw.proxyPort,
      `GET http://${target}/x HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
    );
    const c = await pollUntil(
      async () => conns[before],
      (x) => x?.closed === true,
      5_000,
      'the upstream connection closed',
    );
    return { text: r.text, upstreamGot: c!.bytes };
  }

  it('a Host naming another address never reaches an upstream that refuses the CONNECT', async () => {
    grant = false;
    const { text, upstreamGot } = await get('169.254.169.254');
    expect(text).toMatch(/^HTTP\/1\.1 502 /);
    expect(text).toContain('X-Proxyplane-Error: upstream_refused');
    expect(upstreamGot).toMatch(new RegExp(`^CONNECT ${TARGET} HTTP/1\\.1\\r\\n`));
    expect(upstreamGot).not.toContain('GET ');
    expect(upstreamGot).not.toContain('169.254.169.254');
  });

  it('a Host naming the target checked still rides with the CONNECT (no round trip added)', async () => {
    grant = false;
    const { text, upstreamGot } = await get(TARGET);
    expect(text).toContain('X-Proxyplane-Error: upstream_refused');
    expect(upstreamGot).toContain(`GET /x HTTP/1.1\r\nHost: ${TARGET}`);
  });

  it('a target named by a DNS name waits for the 200 even with its own Host: the upstream could resolve it again', async () => {
    grant = false;
    const refused = await get(NAMED_TARGET, NAMED_TARGET);
    expect(refused.text).toContain('X-Proxyplane-Error: upstream_refused');
    expect(refused.upstreamGot).toMatch(/^CONNECT /);
    expect(refused.upstreamGot).not.toContain('GET ');
    expect(refused.upstreamGot).not.toContain('localhost');
    grant = true;
    const granted = await get(NAMED_TARGET, NAMED_TARGET);
    expect(granted.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(granted.text).toContain(`fetched ${NAMED_TARGET}`);
    expect(granted.upstreamGot.indexOf('GET /x HTTP/1.1')).toBeGreaterThan(
      granted.upstreamGot.indexOf('CONNECT '),
    );
  });

  it('granted, the held request follows the 200 with the client’s own Host (virtual hosting kept)', async () => {
    grant = true;
    const { text, upstreamGot } = await get('www.example.com');
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(text).toContain('fetched www.example.com');
    expect(upstreamGot.indexOf('GET /x HTTP/1.1')).toBeGreaterThan(upstreamGot.indexOf('CONNECT '));
  });
});
