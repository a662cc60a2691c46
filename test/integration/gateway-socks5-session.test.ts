// SOCKS5 end to end with the real control plane: an external SOCKS5 proxy (our forward proxy with
// protocol socks5) in the gateway pool, its `username:password` in the Secret Manager emulator; the
// gateway as its own process in controller mode registers with protocol 4, is given the proxy by the
// snapshot function, resolves the credentials and chains crawler traffic through it; its outcomes reach
// the controller under the proxy's name.
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  openTunnel,
  rawExchange,
} from '../../bench/support/gateway-process.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { testProjectId } from '../support/emulators.js';
import { CRAWLER, type GatewayPlane, startGatewayPlane } from '../support/gateway-plane.js';
import { pollUntil } from '../support/poll.js';
import { poolProxy } from '../support/worker-client.js';

const WORKER = 'gw-s5';
const SETTINGS = {
  WORKER_SESSION_TTL_SECONDS: '10',
  WORKER_REPORT_TTL_SECONDS: '5',
  WORKER_REPORT_INTERVAL_SECONDS: '1',
  WORKER_MAX_STALE_AGE_SECONDS: '10',
  OWNERSHIP_GRANT_SECONDS: '30',
  OWNERSHIP_RENEW_BEFORE_SECONDS: '26',
  ALLOCATION_SAFETY_MARGIN_SECONDS: '2',
  CLOCK_SKEW_SECONDS: '1',
  // Ticked every second (gp.startTicking(1000) below).
  SNAPSHOT_TICK_SECONDS: '1',
};

let gp: GatewayPlane;
let gw: GatewayProcess;
let targets: Targets;
let socks: ForwardProxy;
const auth = basicAuth(CRAWLER.user, CRAWLER.pass);

beforeAll(async () => {
  targets = await startTargets();
  gp = await startGatewayPlane({ projectId: testProjectId('demo-gws5'), workerIds: [WORKER], env: SETTINGS });
  socks = createForwardProxy({ host: '127.0.0.1', protocol: 'socks5', credentials: 's5-user:s5-pass' });
  const { port } = await socks.listen();
  await gp.addSecret('s5-up', 's5-user:s5-pass');
  const p = poolProxy('s5-proxy', 1, {
    endpoint: { host: '127.0.0.1', port, protocol: 'socks5' },
    credentialsRef: { secret: 's5-up', version: 'latest' },
    capacity: 50,
  });
  p.status.conditions.push({
    type: 'Healthy',
    status: 'True',
    reason: 'Available',
    message: '',
    lastTransitionTime: new Date(),
    observedGeneration: 1,
  });
  await gp.proxies.create(p);
  gp.startTicking(1000);
  gw = await gp.gateway(WORKER, {
    GATEWAY_SSRF_ALLOW: `127.0.0.1:${targets.httpPort},127.0.0.1:${targets.httpsPort}`,
    NODE_EXTRA_CA_CERTS: targets.certPath,
  });
  await pollUntil(
    () => gw.health(),
    (x) => x.accepting && x.snapshot?.proxies === 1,
    60_000,
    'the gateway to accept with the SOCKS5 proxy',
  );
}, 180_000);

afterAll(async () => {
  await gp?.stop();
  await socks?.close();
  await targets?.close();
});

describe('a SOCKS5 proxy through the whole plane', () => {
  it('the gateway registers with its highest protocol (5, which reads SOCKS5 from 4 on) and is sent the SOCKS5 entry', () => {
    const registered = gw.logEntries().filter((l) => l.message === 'registered with the control plane');
    expect(registered.at(-1)).toMatchObject({ protocolVersion: 5 });
  });

  it('chains CONNECT (TLS inside) and plain HTTP through it with the credentials from Secret Manager', async () => {
    const before = socks.stats();
    const raw = await openTunnel(gw.proxyPort, `127.0.0.1:${targets.httpsPort}`, auth);
    const s = tls.connect({ socket: raw, servername: 'localhost', ca: targets.cert });
    s.write('GET /secure HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      s.on('data', (c: Buffer) => chunks.push(c));
      s.on('end', resolve);
      s.on('error', reject);
    });
    expect(Buffer.concat(chunks).toString()).toMatch(/^HTTP\/1\.1 200/);
    const plain = await rawExchange(
      gw.proxyPort,
      `GET http://127.0.0.1:${targets.httpPort}/page HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: ${auth}\r\n\r\n`,
    );
    expect(plain.text).toMatch(/^HTTP\/1\.1 200/);
    expect(socks.stats()).toMatchObject({ tunnels: before.tunnels + 2, authFailures: before.authFailures });
  });

  it('its outcomes reach the controller under the proxy’s name', async () => {
    const docs = await pollUntil(
      async () => (await gp.firestore.collection('workerOutcomes').get()).docs.map((d) => d.data()),
      (d) => JSON.stringify(d).includes('"s5-proxy"'),
      15_000,
      'outcomes recorded for s5-proxy',
    );
    expect(JSON.stringify(docs)).toContain('"s5-proxy"');
  });
});
