// The probe's one network call (shared/src/adapters/probe/proxy-probe.ts) through a real SOCKS5 proxy
// (emulators/forward-proxy with protocol 'socks5', RFC 1928 + RFC 1929) to real targets: a SOCKS5 CONNECT
// to the URL's host:port, then the GET as to the site itself (inside TLS for https); a fresh connection
// per probe (seed §6); and each failure at the stage an HTTP proxy's would be reported at — DIAL for a
// proxy that cannot be reached, PROXY_HANDSHAKE (the proxy's fault) for refused credentials and a refused
// CONNECT, `timeout` once the deadline has passed (docs/health.md § SOCKS5 proxies).
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import {
  type EchoTarget,
  eventually,
  selfSignedCert,
  startEchoTarget,
  startTlsEchoTarget,
} from '../../emulators/forward-proxy/testing.js';
import { freePort } from '../../emulators/launcher/free-port.js';
import {
  handshakeThroughProxy,
  type ProbeTarget,
  probeThroughProxy,
} from '../../shared/src/adapters/probe/proxy-probe.js';

const credentials = 'crawler:s3cret';
let target: EchoTarget;
let tlsTarget: EchoTarget;
let proxy: ForwardProxy;
let open: ForwardProxy;
let via: ProbeTarget;

beforeAll(async () => {
  target = await startEchoTarget();
  tlsTarget = await startTlsEchoTarget(await selfSignedCert());
  proxy = createForwardProxy({ protocol: 'socks5', credentials });
  open = createForwardProxy({ protocol: 'socks5', credentials: null });
  const addr = await proxy.listen();
  await open.listen();
  via = { ...addr, credentials, protocol: 'socks5' };
});

afterAll(async () => {
  await proxy?.close();
  await open?.close();
  await target?.close();
  await tlsTarget?.close();
});

const probe = (url: string, over: Partial<Parameters<typeof probeThroughProxy>[1]> = {}, to = via) =>
  probeThroughProxy(to, { url, timeoutMs: 3_000, expectedStatus: 200, rejectUnauthorized: false, ...over });

const urls = [
  ['https', () => `${tlsTarget.url}/`],
  ['http', () => `${target.url}/`],
] as const;

describe('probeThroughProxy through a SOCKS5 proxy', () => {
  it('an http URL: one SOCKS5 CONNECT to the target, then an origin-form GET through it', async () => {
    const before = proxy.stats();
    const seen = target.seen.length;
    const r = await probe(`${target.url}/ping?x=1`);
    expect(r).toMatchObject({ ok: true, status: 200, failure: null });
    expect(JSON.parse(r.body!)).toMatchObject({ method: 'GET', url: '/ping?x=1' });
    expect(proxy.stats().tunnels - before.tunnels).toBe(1);
    expect(proxy.stats().forwarded - before.forwarded).toBe(0);
    expect(target.seen.slice(seen).map((s) => `${s.method} ${s.url}`)).toEqual(['GET /ping?x=1']);
  });

  it.each(urls)(
    'a proxy entered by DNS name: the %s probe reports the address it reached (what EGRESS compares the exit with)',
    async (_l, url) => {
      const r = await probe(url(), {}, { ...via, host: 'localhost' });
      expect(r).toMatchObject({ ok: true, proxyAddress: '127.0.0.1' });
    },
  );

  it('an https URL: SOCKS5 CONNECT, then TLS and the GET inside', async () => {
    const before = proxy.stats();
    const seen = tlsTarget.seen.length;
    const r = await probe(`${tlsTarget.url}/healthz`);
    expect(r).toMatchObject({ ok: true, status: 200, failure: null });
    expect(proxy.stats().tunnels - before.tunnels).toBe(1);
    expect(tlsTarget.seen.slice(seen).map((s) => `${s.method} ${s.url}`)).toEqual(['GET /healthz']);
  });

  it('a proxy without credentials is probed with "no authentication"', async () => {
    const r = await probe(`${target.url}/`, {}, { host: open.host, port: open.port, protocol: 'socks5' });
    expect(r).toMatchObject({ ok: true, status: 200 });
  });

  it.each(urls)(
    '%s: every probe opens its own connection to the proxy: nothing is kept alive',
    async (_l, url) => {
      const before = proxy.stats();
      for (let i = 0; i < 3; i++) expect((await probe(url())).ok).toBe(true);
      const after = proxy.stats();
      expect(after.accepted - before.accepted).toBe(3);
      expect(after.tunnels - before.tunnels).toBe(3);
      await eventually(() => proxy.openSockets() === 0, 'every probe connection closed');
    },
  );

  it.each(urls)('%s: another status than the expected one fails at RESPONSE_HEADERS', async (_l, url) => {
    const r = await probe(url(), { expectedStatus: 204 });
    expect(r).toMatchObject({
      ok: false,
      status: 200,
      failure: { stage: 'RESPONSE_HEADERS', code: 'unexpected_status_200' },
    });
  });

  it.each(urls)('%s: wrong credentials fail the PROXY_HANDSHAKE as a 407 does', async (_l, url) => {
    const before = proxy.stats();
    const r = await probe(url(), {}, { ...via, credentials: 'crawler:wrong' });
    expect(r).toMatchObject({
      ok: false,
      failure: { stage: 'PROXY_HANDSHAKE', code: 'proxy_auth_required' },
    });
    expect(proxy.stats().authFailures - before.authFailures).toBe(1);
    expect(proxy.stats().tunnels - before.tunnels).toBe(0);
  });

  it('no credentials for a proxy that wants them (no acceptable method): proxy_auth_required', async () => {
    const r = await probe(`${target.url}/`, {}, { ...via, credentials: null });
    expect(r).toMatchObject({
      ok: false,
      failure: { stage: 'PROXY_HANDSHAKE', code: 'proxy_auth_required' },
    });
  });

  it('a target that refuses the connection: the proxy replies 5, and it is the PROXY_HANDSHAKE', async () => {
    const r = await probe(`http://127.0.0.1:${await freePort()}/`);
    expect(r).toMatchObject({ ok: false, failure: { stage: 'PROXY_HANDSHAKE', code: 'socks_reply_5' } });
  });

  it('a proxy that does not listen fails the DIAL', async () => {
    const r = await probe(`${target.url}/`, {}, { ...via, port: await freePort() });
    expect(r).toMatchObject({ ok: false, failure: { stage: 'DIAL', code: 'econnrefused' } });
  });

  it('an HTTP proxy entered as socks5 fails the PROXY_HANDSHAKE as not_socks5', async () => {
    const http = createForwardProxy({ credentials });
    const addr = await http.listen();
    try {
      const r = await probe(`${target.url}/`, {}, { ...addr, credentials, protocol: 'socks5' });
      expect(r).toMatchObject({ ok: false, failure: { stage: 'PROXY_HANDSHAKE', code: 'not_socks5' } });
    } finally {
      await http.close();
    }
  });

  it.each(urls)(
    '%s: a proxy that accepts and never answers fails at the deadline, as a timeout',
    async (_l, url) => {
      proxy.hang(true);
      try {
        const started = performance.now();
        const r = await probe(url(), { timeoutMs: 300 });
        expect(r).toMatchObject({ ok: false, failure: { stage: 'PROXY_HANDSHAKE', code: 'timeout' } });
        expect(performance.now() - started).toBeLessThan(2_900);
      } finally {
        proxy.hang(false);
      }
      await eventually(() => proxy.openSockets() === 0, 'the hung probe connection closed');
    },
  );

  it('a killed proxy fails the DIAL; revived, it passes again', async () => {
    const victim = createForwardProxy({ protocol: 'socks5', credentials });
    const addr = await victim.listen();
    const to: ProbeTarget = { ...addr, credentials, protocol: 'socks5' };
    try {
      expect((await probe(`${target.url}/`, {}, to)).ok).toBe(true);
      await victim.kill();
      expect(await probe(`${target.url}/`, {}, to)).toMatchObject({
        ok: false,
        failure: { stage: 'DIAL', code: 'econnrefused' },
      });
      await victim.revive();
      expect((await probe(`${target.url}/`, {}, to)).ok).toBe(true);
    } finally {
      await victim.close();
    }
  });
});

describe('handshakeThroughProxy through a SOCKS5 proxy (BASIC without a probe URL)', () => {
  const authority = () => `${target.host}:${target.port}`;

  it('passes on a granted CONNECT and sends nothing through the tunnel', async () => {
    const before = proxy.stats();
    const seen = target.seen.length;
    expect(await handshakeThroughProxy(via, authority(), 3_000)).toMatchObject({ ok: true, failure: null });
    expect(proxy.stats().tunnels - before.tunnels).toBe(1);
    expect(target.seen.length).toBe(seen);
    await eventually(() => proxy.openSockets() === 0, 'the handshake connection closed');
  });

  it.each([
    ['wrong credentials', () => ({ ...via, credentials: 'x:y' }), 'PROXY_HANDSHAKE', 'proxy_auth_required'],
    [
      'a proxy that does not listen',
      async () => ({ ...via, port: await freePort() }),
      'DIAL',
      'econnrefused',
    ],
  ] as const)('%s fails it', async (_l, to, stage, code) => {
    expect(await handshakeThroughProxy(await to(), authority(), 3_000)).toMatchObject({
      ok: false,
      failure: { stage, code },
    });
  });

  it('a hanging proxy: timeout at the PROXY_HANDSHAKE', async () => {
    proxy.hang(true);
    try {
      expect(await handshakeThroughProxy(via, authority(), 300)).toMatchObject({
        ok: false,
        failure: { stage: 'PROXY_HANDSHAKE', code: 'timeout' },
      });
    } finally {
      proxy.hang(false);
    }
  });
});

// A SOCKS5 proxy that grants every CONNECT with an address type RFC 1928 does not define (0x09): the
// `socks` package reads no bound address for it, consumes nothing and still reports the tunnel open, so
// its reply would be the tunnel's first bytes. The probe names it the proxy's fault.
describe('a SOCKS5 proxy granting with an unknown address type', () => {
  let odd: net.Server;
  let to: ProbeTarget;
  beforeAll(async () => {
    odd = net.createServer((s) => {
      s.on('error', () => {});
      let step = 0;
      s.on('data', () => {
        if (step++ === 0) s.write(Buffer.from([0x05, 0x00]));
        else s.write(Buffer.from([0x05, 0x00, 0x00, 0x09, 0x7f, 0x00, 0x00, 0x01, 0x00, 0x50]));
      });
    });
    odd.listen(0, '127.0.0.1');
    await once(odd, 'listening');
    to = {
      host: '127.0.0.1',
      port: (odd.address() as net.AddressInfo).port,
      credentials: null,
      protocol: 'socks5',
    };
  });
  afterAll(() => odd?.close());

  it.each(urls)('the %s probe fails the PROXY_HANDSHAKE as not_socks5', async (_l, url) => {
    expect(await probe(url(), {}, to)).toMatchObject({
      ok: false,
      failure: { stage: 'PROXY_HANDSHAKE', code: 'not_socks5' },
    });
  });

  it('the BASIC handshake fails it too', async () => {
    expect(await handshakeThroughProxy(to, `${target.host}:${target.port}`, 3_000)).toMatchObject({
      ok: false,
      failure: { stage: 'PROXY_HANDSHAKE', code: 'not_socks5' },
    });
  });
});
