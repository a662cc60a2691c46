// A plain-HTTP answer that breaks off after its head (contract seed §5: TUNNEL, failed after the tunnel
// was established) is reported as a TUNNEL failure, on both listeners and both plain-HTTP paths: before,
// only the head's success was, and a truncated answer counted as nothing but a success. The scripted
// upstream answers 10 of 1,000 bytes, then resets the connection — in absolute form itself, or as the
// pinned target at the end of a CONNECT tunnel to itself. A gateway in process (its worker read directly).
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../../bench/support/gateway-process.js';
import type { GatewayHandle } from '../../functions/gateway/src/gateway.js';
import type { Outcome } from '../../functions/gateway/src/outcomes.js';
import { pollUntil } from '../support/poll.js';
import { scriptedUpstream } from '../support/scripted-proxy.js';
import { startTwoPathGateway, twoPathSnapshot } from '../support/two-path-gateway.js';

/** One route per plain-HTTP path, both to the scripted upstream. */
const HOSTS = { absolute: '127.0.0.5', pinned: '127.0.0.6' } as const;

/** POST /v1/fetch, the answer read as far as it goes: status and the body bytes that came. */
function fetchAsFarAsItGoes(
  port: number,
  url: string,
  timeoutMs?: number,
): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/fetch' }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      res.on('error', () => {});
      res.on('close', () => resolve({ status: res.statusCode!, bytes }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ url, timeoutMs }));
  });
}

describe('an answer that breaks off after its head', () => {
  const scripted = scriptedUpstream();
  let gw: GatewayHandle;

  beforeAll(async () => {
    const port = await scripted.listen();
    const file = twoPathSnapshot(port, HOSTS);
    gw = await startTwoPathGateway(file, HOSTS);
  });

  afterAll(async () => {
    await gw?.shutdown();
    await scripted.close();
  });

  it.each([
    ['the proxy listener', 'absolute'],
    ['the proxy listener', 'pinned'],
    ['/v1/fetch', 'absolute'],
    ['/v1/fetch', 'pinned'],
  ] as const)('%s, %s: the head reported a success, the break a TUNNEL failure', async (listener, path) => {
    const host = HOSTS[path];
    gw.worker.takeOutcomes(1000);
    const taken: Outcome[] = [];
    if (listener === 'the proxy listener') {
      const r = await rawExchange(
        gw.proxyPort!,
        `GET http://${host}/truncated HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      );
      expect(r.text).toMatch(/^HTTP\/1\.1 200 /);
      expect(r.text.endsWith('x'.repeat(10))).toBe(true);
    } else {
      const r = await fetchAsFarAsItGoes(gw.httpPort, `http://${host}/truncated`);
      expect(r.status).toBe(200);
      expect(r.bytes).toBeLessThan(1000);
    }
    // The head's when it came, the break's once the session is over (the client may see its end first).
    const outcomes = await pollUntil(
      async () => {
        taken.push(...gw.worker.takeOutcomes(1000));
        return taken;
      },
      (o) => o.length >= 2,
      2_000,
      'both outcomes',
    );
    expect(outcomes.map(({ route, stage, ok }) => ({ route, stage, ok }))).toEqual([
      { route: path, stage: 'RESPONSE_HEADERS', ok: true },
      { route: path, stage: 'TUNNEL', ok: false },
    ]);
    await pollUntil(
      async () => gw.worker.totals(),
      (t) => t.active + t.reserved === 0,
      5_000,
      'no slot held',
    );
  });

  // The fetch's deadline cutting a body still coming is the caller's bound (or the grant's), not the
  // target's side breaking off: no evidence against the proxy, as for a head that did not come in time.
  it.each(['absolute', 'pinned'] as const)(
    '/v1/fetch, %s: a body its own deadline cuts is no TUNNEL failure',
    async (path) => {
      gw.worker.takeOutcomes(1000);
      const r = await fetchAsFarAsItGoes(gw.httpPort, `http://${HOSTS[path]}/endless`, 300);
      expect(r.status).toBe(200);
      expect(r.bytes).toBeGreaterThan(0);
      await pollUntil(
        async () => gw.worker.totals(),
        (t) => t.active + t.reserved === 0,
        5_000,
        'no slot held',
      );
      expect(gw.worker.takeOutcomes(1000).map(({ route, stage, ok }) => ({ route, stage, ok }))).toEqual([
        { route: path, stage: 'RESPONSE_HEADERS', ok: true },
      ]);
    },
  );
});

// An answer with no length (de-chunked for an HTTP/1.0 client, close-delimited by the target) ends where
// the connection does: a FIN after its first 10 bytes read as the whole page, while the gateway reported a
// failed TUNNEL. The client must read an error instead, as on /v1/fetch. The upstream here answers an
// absolute-form request chunked (1,000 bytes announced), an origin-form one inside a CONNECT tunnel with no
// length at all; 10 bytes, then a reset — or, for /stall, nothing more: the gateway's idle timeout cuts it.
describe('an answer with no length that breaks off reaches the client as an error', () => {
  const sockets = new Set<net.Socket>();
  const upstream = net.createServer((s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => {});
    let buf = '';
    s.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const [method, target] = buf.slice(0, end).split(' ') as [string, string];
        buf = buf.slice(end + 4);
        if (method === 'CONNECT') {
          s.write('HTTP/1.1 200 Connection established\r\n\r\n');
          continue;
        }
        s.write(
          target.startsWith('http://')
            ? 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n0123456789'
            : 'HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n0123456789',
          // The reset a moment later: the bytes surely reached the client first.
          () => target.endsWith('/stall') || setTimeout(() => s.resetAndDestroy(), 100),
        );
      }
    });
  });
  let gw: GatewayHandle;

  beforeAll(async () => {
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    gw = await startTwoPathGateway(twoPathSnapshot(port, HOSTS), HOSTS, {
      env: { GATEWAY_IDLE_TIMEOUT_MS: '1000' },
    });
  });

  afterAll(async () => {
    await gw?.shutdown();
    for (const s of sockets) s.destroy();
    await new Promise((r) => upstream.close(r));
  });

  /** Writes `request` on a raw socket; how it ended (a clean end, or the error's code) and the body read. */
  function exchange(request: string): Promise<{ ended: string; body: string }> {
    return new Promise((resolve) => {
      const c = net.connect({ port: gw.proxyPort!, host: '127.0.0.1' });
      let text = '';
      const body = () => text.slice(text.lastIndexOf('\r\n\r\n') + 4);
      c.on('data', (d: Buffer) => {
        text += d.toString('latin1');
      });
      c.on('end', () => resolve({ ended: 'end', body: body() }));
      c.on('error', (e: NodeJS.ErrnoException) => resolve({ ended: e.code ?? 'error', body: body() }));
      c.write(request);
    });
  }

  it.each([
    [
      'absolute form, de-chunked',
      `GET http://${HOSTS.absolute}/page HTTP/1.0\r\nHost: ${HOSTS.absolute}\r\n\r\n`,
    ],
    ['pinned, close-delimited', `GET http://${HOSTS.pinned}/page HTTP/1.0\r\nHost: ${HOSTS.pinned}\r\n\r\n`],
    // The tunnel's bytes are the client's to frame: the upstream's reset is mirrored, not made a FIN.
    [
      'a CONNECT tunnel',
      `CONNECT ${HOSTS.pinned}:80 HTTP/1.1\r\nHost: ${HOSTS.pinned}:80\r\n\r\nGET /page HTTP/1.0\r\nHost: ${HOSTS.pinned}\r\n\r\n`,
    ],
  ])('the proxy listener, %s, HTTP/1.0 client: a reset, not a clean end', async (_, request) => {
    expect(await exchange(request)).toEqual({ ended: 'ECONNRESET', body: '0123456789' });
  });

  // The same for the sweep's cut of an answer stalled mid-body (GATEWAY_IDLE_TIMEOUT_MS); a CONNECT tunnel
  // the gateway cuts keeps its FIN: nothing says the bytes inside were an answer.
  it.each([
    [
      'absolute form, de-chunked',
      'ECONNRESET',
      `GET http://${HOSTS.absolute}/stall HTTP/1.0\r\nHost: ${HOSTS.absolute}\r\n\r\n`,
    ],
    [
      'pinned, close-delimited',
      'ECONNRESET',
      `GET http://${HOSTS.pinned}/stall HTTP/1.0\r\nHost: ${HOSTS.pinned}\r\n\r\n`,
    ],
    [
      'a CONNECT tunnel',
      'end',
      `CONNECT ${HOSTS.pinned}:80 HTTP/1.1\r\nHost: ${HOSTS.pinned}:80\r\n\r\nGET /stall HTTP/1.0\r\nHost: ${HOSTS.pinned}\r\n\r\n`,
    ],
  ])(
    'the proxy listener, %s, stalled mid-body: the idle timeout cuts it with %s',
    async (_, ended, request) => {
      expect(await exchange(request)).toEqual({ ended, body: '0123456789' });
    },
  );
});
