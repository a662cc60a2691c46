// The HTTP listener's bounds against clients that never finish a head, as the proxy listener's
// (gateway-hostile.test.ts): the header timeout holds within about a second — Node checks it on a timer of
// its own, every 30 s by default, so GATEWAY_HEADER_TIMEOUT_MS was enforced up to 30 s late — and open
// connections are capped at GATEWAY_MAX_CONNECTIONS: unauthenticated clients could hold any number of
// sockets, out of the file descriptors both listeners share. A real gateway process; the header-timeout
// case comes first, well inside the first 30 s of Node's default timer, so that it fails without the
// gateway's own checking interval.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, rawExchange, startGateway } from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { DEAD_PORT } from '../support/dead-port.js';
import { pollUntil } from '../support/poll.js';

const CAP = 10;
/** A head that never ends: its last line is never followed by the empty one. */
const PARTIAL = 'POST /v1/fetch HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n';

describe('the HTTP listener under clients that never finish a head', () => {
  let gw: GatewayProcess;

  beforeAll(async () => {
    gw = await startGateway(snapshotFile({ upstreams: [`http://127.0.0.1:${DEAD_PORT}`] }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_HEADER_TIMEOUT_MS: '1000',
      GATEWAY_MAX_CONNECTIONS: String(CAP),
    });
  });

  afterAll(async () => {
    await gw?.stop('SIGKILL');
  });

  it('answers each unfinished head with 408 header_timeout and closes it within seconds of the header timeout', async () => {
    const results = await Promise.all(
      Array.from({ length: CAP - 2 }, () => rawExchange(gw.httpPort, PARTIAL, { timeoutMs: 5_000 })),
    );
    for (const r of results) {
      expect(r.closedBy).toBe('server');
      expect(r.text).toMatch(/^HTTP\/1\.1 408 /);
      // In the gateway's words, as every other refusal (docs/gateway.md § Error codes): not Node's bare 408.
      const [head, body] = r.text.split('\r\n\r\n');
      expect(head).toContain('\r\nX-Proxyplane-Error: header_timeout\r\n');
      expect(JSON.parse(body!)).toEqual({ error: 'header_timeout' });
      // Not before the timeout: the head was given its second.
      expect(r.ms).toBeGreaterThanOrEqual(900);
    }
  });

  it('refuses connections past GATEWAY_MAX_CONNECTIONS at accept, and serves again once they are gone', async () => {
    const results = await Promise.all(
      Array.from({ length: CAP + 15 }, () => rawExchange(gw.httpPort, PARTIAL, { timeoutMs: 5_000 })),
    );
    for (const r of results) expect(r.closedBy).toBe('server');
    const timedOut = results.filter((r) => /^HTTP\/1\.1 408 /.test(r.text));
    const refused = results.filter((r) => r.text === '');
    expect(timedOut.length).toBeLessThanOrEqual(CAP);
    expect(timedOut.length + refused.length).toBe(results.length);
    // Refused at once, not held until the header timeout.
    for (const r of refused) expect(r.ms).toBeLessThan(900);
    const h = await pollUntil(
      gw.health,
      (v) => v.sockets.httpClients <= 1,
      5_000,
      'the held connections gone (but /healthz its own)',
    );
    expect(h.sockets.httpClients).toBeLessThanOrEqual(1);
  });
});

// Node refuses a headersTimeout above the server's requestTimeout (300 s by default) at createServer: a
// header timeout the config accepts past that stopped the gateway from starting at all.
it('starts with a header timeout past Node’s default request timeout', async () => {
  const gw = await startGateway(snapshotFile({ upstreams: [`http://127.0.0.1:${DEAD_PORT}`] }), {
    GATEWAY_CLIENT_USERS: 'crawler:s3cret',
    GATEWAY_HEADER_TIMEOUT_MS: '400000',
  });
  try {
    expect((await gw.health()).sockets).toBeDefined();
  } finally {
    await gw.stop('SIGKILL');
  }
});
