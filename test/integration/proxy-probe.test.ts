// The probe's one network call (shared/src/adapters/probe/proxy-probe.ts) against a real forward proxy and
// real targets: operator seed §6 — "fresh transport per probe, DisableKeepAlives=true (load-bearing:
// keep-alives would cache the CONNECT tunnel and later probes would never re-exercise it)", "https probe
// URL ⇒ CONNECT through the proxy + TLS inside", "success = err == nil AND expected status code" — and the
// stage each failure is reported at (contract §5's stages, which the probe.result log lines carry).
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
let via: ProbeTarget;

beforeAll(async () => {
  target = await startEchoTarget();
  tlsTarget = await startTlsEchoTarget(await selfSignedCert());
  proxy = createForwardProxy({ credentials });
  const addr = await proxy.listen();
  via = { ...addr, credentials };
});

afterAll(async () => {
  await proxy?.close();
  await target?.close();
  await tlsTarget?.close();
});

const probe = (url: string, over: Partial<Parameters<typeof probeThroughProxy>[1]> = {}, to = via) =>
  probeThroughProxy(to, { url, timeoutMs: 3_000, expectedStatus: 200, rejectUnauthorized: false, ...over });

describe('probeThroughProxy', () => {
  it('an https URL is a CONNECT to the target, then TLS and the GET inside the tunnel', async () => {
    const before = proxy.stats();
    const seen = tlsTarget.seen.length;
    const r = await probe(`${tlsTarget.url}/healthz?x=1`);
    expect(r).toMatchObject({ ok: true, status: 200, failure: null });
    expect(proxy.stats().tunnels - before.tunnels).toBe(1);
    expect(proxy.stats().forwarded - before.forwarded).toBe(0);
    expect(tlsTarget.seen.slice(seen).map((s) => `${s.method} ${s.url}`)).toEqual(['GET /healthz?x=1']);
  });

  it('an http URL is one absolute-URI GET through the proxy', async () => {
    const before = proxy.stats();
    const r = await probe(`${target.url}/ping`);
    expect(r).toMatchObject({ ok: true, status: 200, failure: null });
    expect(JSON.parse(r.body!)).toMatchObject({ method: 'GET', url: '/ping' });
    expect(proxy.stats().forwarded - before.forwarded).toBe(1);
  });

  it.each([
    ['https', () => `${tlsTarget.url}/`],
    ['http', () => `${target.url}/`],
  ] as const)(
    'a proxy entered by DNS name: the %s probe reports the address it reached (what EGRESS compares the exit with)',
    async (_l, url) => {
      const r = await probe(url(), {}, { ...via, host: 'localhost' });
      expect(r).toMatchObject({ ok: true, proxyAddress: '127.0.0.1' });
    },
  );

  it.each([
    ['https', () => `${tlsTarget.url}/`, 'tunnels'],
    ['http', () => `${target.url}/`, 'forwarded'],
  ] as const)(
    'every %s probe opens its own connection to the proxy: nothing is kept alive',
    async (_l, url, counter) => {
      const before = proxy.stats();
      for (let i = 0; i < 3; i++) expect((await probe(url())).ok).toBe(true);
      const after = proxy.stats();
      expect(after.accepted - before.accepted).toBe(3);
      expect(after[counter] - before[counter]).toBe(3);
      await eventually(() => proxy.openSockets() === 0, 'every probe connection closed');
    },
  );

  it.each([
    ['https', () => `${tlsTarget.url}/`],
    ['http', () => `${target.url}/`],
  ] as const)('%s: another status than the expected one fails at RESPONSE_HEADERS', async (_l, url) => {
    const r = await probe(url(), { expectedStatus: 204 });
    expect(r).toMatchObject({
      ok: false,
      status: 200,
      failure: { stage: 'RESPONSE_HEADERS', code: 'unexpected_status_200' },
    });
  });

  it.each([
    ['https', () => `${tlsTarget.url}/`],
    ['http', () => `${target.url}/`],
  ] as const)('%s: wrong proxy credentials fail the PROXY_HANDSHAKE (407)', async (_l, url) => {
    const r = await probe(url(), {}, { ...via, credentials: 'crawler:wrong' });
    expect(r).toMatchObject({
      ok: false,
      failure: { stage: 'PROXY_HANDSHAKE', code: 'proxy_auth_required' },
    });
  });

  it('a proxy that does not listen fails the DIAL', async () => {
    const r = await probe(`${target.url}/`, {}, { host: '127.0.0.1', port: await freePort() });
    expect(r).toMatchObject({ ok: false, failure: { stage: 'DIAL', code: 'econnrefused' } });
  });

  it('an https target whose certificate does not verify fails inside the tunnel', async () => {
    const r = await probe(`${tlsTarget.url}/`, { rejectUnauthorized: true });
    expect(r.ok).toBe(false);
    expect(r.failure?.stage).toBe('RESPONSE_HEADERS');
  });

  it.each([
    ['https', () => `${tlsTarget.url}/`],
    ['http', () => `${target.url}/`],
  ] as const)(
    '%s: a proxy that accepts and never answers fails at the deadline, as a timeout',
    async (_l, url) => {
      proxy.hang(true);
      try {
        const started = performance.now();
        const r = await probe(url(), { timeoutMs: 300 });
        expect(r.ok).toBe(false);
        expect(r.failure?.code).toBe('timeout');
        expect(performance.now() - started).toBeLessThan(2_900);
      } finally {
        proxy.hang(false);
      }
    },
  );
});

describe('handshakeThroughProxy (BASIC without a probe URL)', () => {
  it('passes on a 200 to CONNECT and fails a 407 as PROXY_HANDSHAKE', async () => {
    const authority = `${target.host}:${target.port}`;
    expect(await handshakeThroughProxy(via, authority, 3_000)).toMatchObject({ ok: true, status: 200 });
    expect(await handshakeThroughProxy({ ...via, credentials: 'x:y' }, authority, 3_000)).toMatchObject({
      ok: false,
      status: 407,
      failure: { stage: 'PROXY_HANDSHAKE', code: 'proxy_auth_required' },
    });
  });
});
