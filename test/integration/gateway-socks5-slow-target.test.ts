// A SOCKS5 upstream that timed out is blamed on the proxy only when the proxy itself stalled: a timeout
// with the method choice (and the credentials) answered and the CONNECT sent, not one byte of its reply
// in, is an upstream still reaching the target (a blackholed address), reported to the passive health
// track as RESPONSE_HEADERS — ambiguous — as an http upstream's unanswered CONNECT is, not as
// PROXY_HANDSHAKE, which always counts against the proxy: any client could otherwise fail a SOCKS5 proxy
// by asking it for an address that drops SYNs. An upstream silent before its greeting or credentials are
// answered, or one that began its reply and stalled, stays PROXY_HANDSHAKE; a reply code saying the target
// could not be reached (RFC 1928 REP 0x03–0x06) is a RESPONSE_HEADERS failure too. On the proxy listener
// (CONNECT and plain HTTP) and on /v1/fetch, against real gateway processes and scripted upstreams
// (upstream-tunnel.ts evidenceStage, socks5-handshake.ts, docs/gateway.md § SOCKS5 upstreams).
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
const UPSTREAM_TIMEOUT_MS = 2000;

/** Where the scripted upstream stops answering. */
type Script =
  /** Never answers the greeting. */
  | 'silent'
  /** Chooses user/password (0x02), never answers the credentials. */
  | 'auth-silent'
  /**
   * Chooses no authentication (0x00), or user/password and accepts the credentials when `auth`, then
   * answers the CONNECT by its destination port: 1, never (the target blackholed); 2, the first two bytes
   * of a granted reply and nothing more; any other port, a reply whose REP is that port.
   */
  | 'connect';

async function startScripted(
  script: Script,
  auth = false,
): Promise<{ port: number; connects: number[]; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const connects: number[] = [];
  const server = net.createServer((s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => {});
    let buf = Buffer.alloc(0);
    let step: 'greeting' | 'auth' | 'connect' | 'done' = 'greeting';
    s.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (step === 'greeting') {
        if (buf.length < 2 || buf.length < 2 + buf[1]!) return;
        buf = buf.subarray(2 + buf[1]!);
        if (script === 'silent') {
          step = 'done';
          return;
        }
        const userPass = script === 'auth-silent' || auth;
        s.write(Buffer.from([0x05, userPass ? 0x02 : 0x00]));
        step = userPass ? 'auth' : 'connect';
      }
      if (step === 'auth') {
        // RFC 1929: VER ULEN UNAME PLEN PASSWD.
        if (buf.length < 2 || buf.length < 3 + buf[1]! || buf.length < 3 + buf[1]! + buf[2 + buf[1]!]!)
          return;
        buf = buf.subarray(3 + buf[1]! + buf[2 + buf[1]!]!);
        if (script === 'auth-silent') {
          step = 'done';
          return;
        }
        s.write(Buffer.from([0x01, 0x00]));
        step = 'connect';
      }
      if (step === 'connect') {
        // VER CMD RSV ATYP(0x01) DST.ADDR(4) DST.PORT(2): the gateway asks for the checked IPv4 address.
        if (buf.length < 10) return;
        const port = buf.readUInt16BE(8);
        connects.push(port);
        step = 'done';
        if (port === 1) return;
        if (port === 2) s.write(Buffer.from([0x05, 0x00]));
        else s.write(Buffer.from([0x05, port, 0x00, 0x01, 0, 0, 0, 0, 0, 0]));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    connects,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Each upstream's route: the target host the test asks for. */
const HOSTS = {
  silent: '127.0.0.11',
  'auth-silent': '127.0.0.12',
  connect: '127.0.0.13',
  'auth-connect': '127.0.0.14',
} as const;
type Upstream = keyof typeof HOSTS;
const NAMES = Object.keys(HOSTS) as Upstream[];

describe('gateway: a SOCKS5 upstream timed out, blamed on the proxy only when the proxy stalled', () => {
  const ups = {} as Record<Upstream, Awaited<ReturnType<typeof startScripted>>>;
  let gw: GatewayProcess;
  const stages: Record<string, number> = { PROXY_HANDSHAKE: 0, RESPONSE_HEADERS: 0 };

  beforeAll(async () => {
    ups.silent = await startScripted('silent');
    ups['auth-silent'] = await startScripted('auth-silent');
    ups.connect = await startScripted('connect');
    ups['auth-connect'] = await startScripted('connect', true);
    const file = snapshotFile({
      upstreams: NAMES.map((n) =>
        n.startsWith('auth-') ? `http://u:p@127.0.0.1:${ups[n].port}` : `http://127.0.0.1:${ups[n].port}`,
      ),
      routing: NAMES.map((n) => ({
        name: n,
        match: { hosts: [HOSTS[n]] },
        selector: { pool: n },
        policy: 'round-robin' as const,
      })),
      attributes: (i) => ({ pool: NAMES[i]! }),
    });
    const snapshot = { ...file, proxies: file.proxies.map((p) => ({ ...p, protocol: 'socks5' })) };
    gw = await startGateway(snapshot, {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: NAMES.flatMap((n) => [1, 2, 3, 4, 5, 6].map((p) => `${HOSTS[n]}:${p}`)).join(','),
      GATEWAY_UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      LOG_LEVEL: 'debug',
    });
  });

  afterAll(async () => {
    await gw?.stop();
    await Promise.all(NAMES.map((n) => ups[n]?.close()));
  });

  /** One request on each path: CONNECT and plain HTTP on the proxy listener, then /v1/fetch. */
  async function everyPath(host: string, port: number) {
    const timeoutMs = 4 * UPSTREAM_TIMEOUT_MS;
    const [connect, plain, fetched] = await Promise.all([
      rawExchange(gw.proxyPort, `CONNECT ${host}:${port} HTTP/1.1\r\nProxy-Authorization: ${AUTH}\r\n\r\n`, {
        timeoutMs,
      }),
      rawExchange(
        gw.proxyPort,
        `GET http://${host}:${port}/ HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
        { timeoutMs },
      ),
      postFetch(gw.httpPort, { url: `http://${host}:${port}/` }, AUTH, timeoutMs),
    ]);
    return { connect, plain, fetched };
  }

  it.each([
    ['the greeting never answered', 'PROXY_HANDSHAKE', 'silent'],
    ['the credentials never answered', 'PROXY_HANDSHAKE', 'auth-silent'],
    ['the CONNECT never answered (no authentication)', 'RESPONSE_HEADERS', 'connect'],
    ['the CONNECT never answered (credentials accepted)', 'RESPONSE_HEADERS', 'auth-connect'],
  ] as const)('%s: 504 upstream_timeout on every path, reported at %s', async (_, stage, name) => {
    const { connect, plain, fetched } = await everyPath(HOSTS[name], 1);
    for (const r of [connect, plain]) {
      expect(r.text).toMatch(/^HTTP\/1\.1 504 /);
      expect(r.text).toContain('X-Proxyplane-Error: upstream_timeout');
      expect(r.ms).toBeGreaterThanOrEqual(UPSTREAM_TIMEOUT_MS - 100);
    }
    expect(fetched.status).toBe(504);
    expect(JSON.parse(fetched.body)).toEqual({ error: 'upstream_timeout' });
    if (name === 'connect' || name === 'auth-connect')
      expect(ups[name].connects.slice(-3)).toEqual([1, 1, 1]);
    stages[stage]! += 3;
  });

  it('a reply begun and never finished is the proxy stalling: PROXY_HANDSHAKE', async () => {
    const { connect, plain, fetched } = await everyPath(HOSTS.connect, 2);
    for (const r of [connect, plain]) expect(r.text).toMatch(/^HTTP\/1\.1 504 /);
    expect(fetched.status).toBe(504);
    stages.PROXY_HANDSHAKE! += 3;
  });

  it.each([
    [3, 'network unreachable'],
    [4, 'host unreachable'],
    [5, 'connection refused'],
    [6, 'TTL expired'],
  ])('reply 0x0%i (%s) is the target failing: 502 upstream_refused, RESPONSE_HEADERS', async (rep) => {
    const { connect, plain, fetched } = await everyPath(HOSTS['auth-connect'], rep);
    for (const r of [connect, plain]) {
      expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
      expect(r.text).toContain('X-Proxyplane-Error: upstream_refused');
      expect(r.text).toContain(`X-Proxyplane-Socks-Reply: ${rep}`);
    }
    expect(fetched.status).toBe(502);
    expect(JSON.parse(fetched.body)).toEqual({ error: 'upstream_refused', socksReply: rep });
    stages.RESPONSE_HEADERS! += 3;
  });

  it('every failure is reported at its stage (what the passive health track tallies)', async () => {
    const tally = () => {
      const sum: Record<string, number> = {};
      for (const e of gw.logEntries()) {
        if (e.message !== 'outcomes') continue;
        for (const [stage, n] of Object.entries(e.failedByStage as Record<string, number>))
          sum[stage] = (sum[stage] ?? 0) + n;
      }
      return sum;
    };
    // The standalone reporter drains the outcome queue every 5 s.
    const want = stages.PROXY_HANDSHAKE! + stages.RESPONSE_HEADERS!;
    const seen = await eventually(
      async () => tally(),
      (t) => Object.values(t).reduce((a, b) => a + b, 0) >= want,
      12_000,
    );
    expect(seen).toEqual({ PROXY_HANDSHAKE: 9, RESPONSE_HEADERS: 18 });
    expect(seen).toEqual(stages);
  }, 20_000);
});
