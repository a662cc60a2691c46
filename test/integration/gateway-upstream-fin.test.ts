// An upstream that accepts the connection and then closes it before answering — a residential SOCKS5
// provider dropping clients not on its allow-list after the greeting, an http proxy closing instead of
// answering its CONNECT, a target ending before its status line — fails the request at once as
// 502 upstream_closed / target_closed, not after GATEWAY_UPSTREAM_TIMEOUT_MS as 504: the gateway dials
// with allowHalfOpen, so a FIN alone never becomes 'close' (proxy-session.ts onUpEnd). A reset at the
// same point is upstream_closed too, on the proxy listener and on /v1/fetch (docs/gateway.md § SOCKS5
// upstreams). The outcome is reported once, at its stage, and no socket is left open.
import net, { type AddressInfo, type Socket } from 'node:net';
import { inspect } from 'node:util';
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
import { socks5Handshake } from '../../functions/gateway/src/socks5-handshake.js';
import type { TunnelError } from '../../functions/gateway/src/upstream-tunnel.js';

const AUTH = basicAuth('crawler', 's3cret');
const UPSTREAM_TIMEOUT_MS = 10_000;
/** A bound that tells "at once" from "at the timeout", not a performance target. */
const AT_ONCE_MS = 2_000;
const SECRET = 'pw-never-in-a-cause';

type Behaviour =
  | 'fin-after-head'
  | 'rst-after-head'
  | 'fin-after-200'
  | 'fin-after-greeting'
  | 'socks-refuse-then-fin'
  | 'answer-403'
  | 'answer-407';

/**
 * A scripted upstream: reads what the gateway sends first (an http request head, or a SOCKS5 greeting)
 * and then ends (FIN), resets, or answers the CONNECT with 200 and ends before any target byte.
 */
async function startUpstream(behaviour: Behaviour): Promise<{
  port: number;
  open(): number;
  close(): Promise<void>;
}> {
  const sockets = new Set<Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => {});
    let buf = Buffer.alloc(0);
    s.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (behaviour === 'fin-after-greeting') {
        if (buf.length >= 2 && buf.length >= 2 + buf[1]!) s.end();
        return;
      }
      if (behaviour === 'socks-refuse-then-fin') {
        // No method (0x00) after the greeting, then a whole CONNECT reply 0x05 (refused) and the FIN in
        // one segment: the reply, not the FIN, names the failure.
        if (buf.length === 3 && buf[0] === 0x05) s.write(Buffer.from([0x05, 0x00]));
        else if (buf.length >= 3 + 10) s.end(Buffer.from([0x05, 0x05, 0x00, 0x01, 0, 0, 0, 0, 0, 0]));
        return;
      }
      if (buf.indexOf('\r\n\r\n') < 0) return;
      if (behaviour === 'answer-403') s.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      else if (behaviour === 'answer-407')
        s.end(
          'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n',
        );
      else if (behaviour === 'rst-after-head') s.resetAndDestroy();
      else if (behaviour === 'fin-after-200') s.end('HTTP/1.1 200 Connection established\r\n\r\n');
      else s.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    open: () => sockets.size,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Loopback target addresses, each routed to one scripted upstream (none of them is ever dialled). */
const HOSTS = {
  httpFin: '127.0.0.2',
  httpRst: '127.0.0.3',
  http200Fin: '127.0.0.4',
  socksFin: '127.0.0.5',
  socksRefuse: '127.0.0.6',
  httpRefuse: '127.0.0.7',
  httpAuth: '127.0.0.8',
} as const;
const BEHAVIOUR: Record<keyof typeof HOSTS, Behaviour> = {
  httpFin: 'fin-after-head',
  httpRst: 'rst-after-head',
  http200Fin: 'fin-after-200',
  socksFin: 'fin-after-greeting',
  socksRefuse: 'socks-refuse-then-fin',
  httpRefuse: 'answer-403',
  httpAuth: 'answer-407',
};
const NAMES = Object.keys(HOSTS) as (keyof typeof HOSTS)[];

describe('an upstream that closes before answering', () => {
  const upstreams = new Map<string, Awaited<ReturnType<typeof startUpstream>>>();
  let gw: GatewayProcess;
  const stages: Record<string, number> = { PROXY_HANDSHAKE: 0, RESPONSE_HEADERS: 0 };

  beforeAll(async () => {
    for (const n of NAMES) upstreams.set(n, await startUpstream(BEHAVIOUR[n]));
    const file = snapshotFile({
      upstreams: NAMES.map((n) =>
        n === 'socksFin'
          ? `http://s5:${SECRET}@127.0.0.1:${upstreams.get(n)!.port}`
          : n === 'socksRefuse'
            ? `http://127.0.0.1:${upstreams.get(n)!.port}`
            : `http://127.0.0.1:${upstreams.get(n)!.port}`,
      ),
      routing: NAMES.map((n) => ({
        name: `to-${n.toLowerCase()}`,
        match: { hosts: [HOSTS[n]] },
        selector: { pool: n },
        policy: 'round-robin' as const,
      })),
      attributes: (i) => ({ pool: NAMES[i]! }),
    });
    const snapshot = {
      ...file,
      proxies: file.proxies.map((p, i) => ({
        ...p,
        protocol: NAMES[i]!.startsWith('socks') ? 'socks5' : 'http',
      })),
    };
    gw = await startGateway(snapshot, {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: NAMES.map((n) => `${HOSTS[n]}:9`).join(','),
      GATEWAY_UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      GATEWAY_LINGER_MS: '1000',
      LOG_LEVEL: 'debug',
    });
  });

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    for (const u of upstreams.values()) await u.close();
  });

  const connect = (host: string) => `CONNECT ${host}:9 HTTP/1.1\r\nProxy-Authorization: ${AUTH}\r\n\r\n`;
  const plain = (host: string) =>
    `GET http://${host}:9/page HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`;

  it.each([
    ['http upstream FIN after the CONNECT', 'upstream_closed', 'PROXY_HANDSHAKE', connect(HOSTS.httpFin)],
    [
      'http upstream FIN after the pinned plain HTTP request',
      'upstream_closed',
      'PROXY_HANDSHAKE',
      plain(HOSTS.httpFin),
    ],
    ['http upstream RST after the CONNECT', 'upstream_closed', 'PROXY_HANDSHAKE', connect(HOSTS.httpRst)],
    [
      'socks5 upstream FIN after the greeting (CONNECT)',
      'upstream_closed',
      'PROXY_HANDSHAKE',
      connect(HOSTS.socksFin),
    ],
    [
      'socks5 upstream FIN after the greeting (plain HTTP)',
      'upstream_closed',
      'PROXY_HANDSHAKE',
      plain(HOSTS.socksFin),
    ],
    [
      'target FIN before its status line (plain HTTP)',
      'target_closed',
      'RESPONSE_HEADERS',
      plain(HOSTS.http200Fin),
    ],
  ])('%s: 502 %s at once (%s)', async (_name, code, stage, request) => {
    const r = await rawExchange(gw.proxyPort, request, { timeoutMs: UPSTREAM_TIMEOUT_MS + 5_000 });
    expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
    expect(r.text).toContain(`X-Proxyplane-Error: ${code}`);
    expect(r.closedBy).toBe('server');
    expect(r.ms).toBeLessThan(AT_ONCE_MS);
    stages[stage] = (stages[stage] ?? 0) + 1;
  });

  it.each([
    ['http upstream FIN', HOSTS.httpFin],
    ['http upstream RST', HOSTS.httpRst],
    ['socks5 upstream FIN after the greeting', HOSTS.socksFin],
  ])('POST /v1/fetch, %s: 502 upstream_closed at once (PROXY_HANDSHAKE)', async (_name, host) => {
    const t0 = Date.now();
    const r = await postFetch(gw.httpPort, { url: `http://${host}:9/` }, AUTH, UPSTREAM_TIMEOUT_MS + 5_000);
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body)).toEqual({ error: 'upstream_closed' });
    expect(Date.now() - t0).toBeLessThan(AT_ONCE_MS);
    stages.PROXY_HANDSHAKE! += 1;
  });

  it('a SOCKS5 refusal followed at once by the FIN is still upstream_refused with its reply code', async () => {
    const r = await rawExchange(gw.proxyPort, connect(HOSTS.socksRefuse));
    expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
    expect(r.text).toContain('X-Proxyplane-Error: upstream_refused');
    expect(r.text).toContain('X-Proxyplane-Socks-Reply: 5');
    // The upstream answered: the target is what it could not reach (evidenceStage).
    stages.RESPONSE_HEADERS! += 1;
  });

  // An http upstream's refusal of the CONNECT (squid's 403 for a port its rules refuse, its 502/503 for a
  // target down) is about the target: reported as ambiguous, RESPONSE_HEADERS — or any client could fail
  // a proxy on the passive track by asking it for closed ports. Its 407 is the proxy's: PROXY_HANDSHAKE.
  it.each([
    ['refuses the CONNECT (403)', HOSTS.httpRefuse, 'upstream_refused', 403, 'RESPONSE_HEADERS'],
    ['refuses our credentials (407)', HOSTS.httpAuth, 'upstream_auth_failed', 407, 'PROXY_HANDSHAKE'],
  ])(
    'an http upstream that %s: 502 %s on both listeners, reported at its stage',
    async (_n, host, code, status, stage) => {
      const r = await rawExchange(gw.proxyPort, connect(host));
      expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
      expect(r.text).toContain(`X-Proxyplane-Error: ${code}`);
      expect(r.text).toContain(`X-Proxyplane-Upstream-Status: ${status}`);
      const f = await postFetch(
        gw.httpPort,
        { url: `https://${host}:9/` },
        AUTH,
        UPSTREAM_TIMEOUT_MS + 5_000,
      );
      expect(f.status).toBe(502);
      expect(JSON.parse(f.body)).toEqual({ error: code, upstreamStatus: status });
      stages[stage] = (stages[stage] ?? 0) + 2;
    },
  );

  it('reports each failure once, at its stage', async () => {
    const tally = () => {
      const sum: Record<string, number> = { PROXY_HANDSHAKE: 0, RESPONSE_HEADERS: 0 };
      for (const e of gw.logEntries()) {
        if (e.message !== 'outcomes') continue;
        for (const [k, v] of Object.entries((e.failedByStage ?? {}) as Record<string, number>))
          sum[k] = (sum[k] ?? 0) + v;
      }
      return sum;
    };
    // The standalone reporter drains the outcome queue every 5 s.
    const seen = await eventually(
      async () => tally(),
      (t) => t.PROXY_HANDSHAKE! >= stages.PROXY_HANDSHAKE! && t.RESPONSE_HEADERS! >= stages.RESPONSE_HEADERS!,
      12_000,
    );
    expect(seen).toEqual({ PROXY_HANDSHAKE: 10, RESPONSE_HEADERS: 4 });
    expect(seen).toEqual(stages);
  }, 20_000);

  it('leaves no socket open on either side', async () => {
    const health = await eventually(
      () => gw.health(),
      (h) => h.sockets.upstreams === 0 && h.sockets.proxyClients === 0,
    );
    expect(health.sockets).toMatchObject({ upstreams: 0, proxyClients: 0 });
    expect(health.load).toEqual({ active: 0, reserved: 0 });
    const open = await eventually(
      async () => [...upstreams.values()].reduce((n, u) => n + u.open(), 0),
      (n) => n === 0,
    );
    expect(open).toBe(0);
  });

  it('a failed SOCKS5 handshake’s error carries no upstream password anywhere in its cause chain', async () => {
    const up = net.connect({ host: '127.0.0.1', port: upstreams.get('socksFin')!.port });
    await new Promise((r) => up.once('connect', r));
    const hop = {
      host: '127.0.0.1',
      port: upstreams.get('socksFin')!.port,
      credentials: { username: 's5', password: SECRET },
    };
    const e = (await socks5Handshake(up, hop, '127.0.0.5', 9, 5_000).then(
      () => null,
      (x: TunnelError) => x,
    )) as TunnelError;
    expect(e).toMatchObject({ kind: 'closed', stage: 'PROXY_HANDSHAKE' });
    const chain: unknown[] = [];
    for (let c: unknown = e; c !== undefined && chain.length < 10; c = (c as { cause?: unknown }).cause)
      chain.push(c);
    expect(chain.length).toBeGreaterThan(1);
    for (const c of chain) {
      expect(inspect(c, { depth: 10, showHidden: true })).not.toContain(SECRET);
      expect(JSON.stringify(c, Object.getOwnPropertyNames(c))).not.toContain(SECRET);
    }
  });
});
