// A plain-HTTP answer that breaks off after its head (contract seed §5: TUNNEL, failed after the tunnel
// was established) is reported as a TUNNEL failure, on both listeners and both plain-HTTP paths: before,
// only the head's success was, and a truncated answer counted as nothing but a success. The scripted
// upstream answers 10 of 1,000 bytes, then resets the connection — in absolute form itself, or as the
// pinned target at the end of a CONNECT tunnel to itself. A gateway in process (its worker read directly).
import http from 'node:http';
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
