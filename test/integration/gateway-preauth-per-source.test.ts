// One source address cannot fill the proxy listener with connections that never send a head: they need no
// credentials, each is held up to the header timeout, and GATEWAY_MAX_CONNECTIONS of them locked every
// other client out. A source holding GATEWAY_MAX_PREAUTH_PER_SOURCE unadmitted connections has the next one
// closed at accept; its admitted requests (an open tunnel) do not count, other sources are not touched, and
// it gets its room back as its waiting connections close. A real gateway process on loopback, each client
// bound to a 127.0.0.x address of its own; open sockets read from /healthz before and after.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, type GatewayProcess, startGateway } from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { pollUntil } from '../support/poll.js';

const AUTH = basicAuth('crawler', 's3cret');
const SHARE = 4;
const HOG = '127.0.0.2';
const OTHER = '127.0.0.3';

/** A connection from `localAddress` that sends nothing; `closed` settles with what it got once it closes. */
async function idleFrom(port: number, localAddress: string) {
  const s = net.connect({ port, host: '127.0.0.1', localAddress });
  let got = '';
  s.on('data', (d: Buffer) => {
    got += d.toString('latin1');
  });
  s.on('error', () => {});
  const closed = new Promise<string>((r) => s.once('close', () => r(got)));
  await new Promise<void>((r, j) => s.once('connect', r).once('error', j));
  return { socket: s, closed };
}

/** Whether `closed` settled within `ms`: a connection closed at accept goes at once, a waiting one does not. */
const closedWithin = (closed: Promise<string>, ms: number) =>
  Promise.race([closed.then((text) => ({ text })), new Promise<null>((r) => setTimeout(() => r(null), ms))]);

/** A request from `localAddress`: what came back until the server closed. */
function exchangeFrom(port: number, localAddress: string, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    let got = '';
    const timer = setTimeout(() => s.destroy(), 5_000);
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
    });
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
    s.write(bytes);
  });
}

/** A CONNECT tunnel from `localAddress`, established and kept open. */
function tunnelFrom(port: number, localAddress: string, authority: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    let got = '';
    s.on('error', reject);
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (!got.includes('\r\n\r\n')) return;
      if (got.startsWith('HTTP/1.1 200')) resolve(s);
      else reject(new Error(got));
    });
    s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`);
  });
}

describe('the proxy listener’s share of unadmitted connections per source address', () => {
  let targets: Targets;
  let upstream: ForwardProxy;
  let gw: GatewayProcess;
  let get: string;

  beforeAll(async () => {
    targets = await startTargets();
    upstream = createForwardProxy({ credentials: 'up:up-pass' });
    const upstreamUrl = `http://up:up-pass@127.0.0.1:${(await upstream.listen()).port}`;
    gw = await startGateway(snapshotFile({ upstreams: [upstreamUrl] }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${targets.httpPort}`,
      // Far past the test: a connection that is not closed at accept stays open throughout.
      GATEWAY_HEADER_TIMEOUT_MS: '30000',
      GATEWAY_MAX_PREAUTH_PER_SOURCE: String(SHARE),
    });
    get = `GET http://127.0.0.1:${targets.httpPort}/ok HTTP/1.1\r\nProxy-Authorization: ${AUTH}\r\nConnection: close\r\n\r\n`;
  });

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await upstream?.close();
    await targets?.close();
  });

  const sockets = async () => (await gw.health()).sockets;

  it('closes a source’s connection past its share at accept, serves every other source, and leaks nothing', async () => {
    expect(await sockets()).toMatchObject({ proxyClients: 0, upstreams: 0 });
    // Admitted requests are not held against the source: it keeps its tunnels and its whole share besides.
    const tunnels = await Promise.all(
      Array.from({ length: 2 }, () => tunnelFrom(gw.proxyPort, HOG, `127.0.0.1:${targets.httpPort}`)),
    );
    const waiting = [];
    for (let i = 0; i < SHARE; i++) waiting.push(await idleFrom(gw.proxyPort, HOG));
    await pollUntil(
      sockets,
      (s) => s.proxyClients === 2 + SHARE,
      5_000,
      'tunnels and waiting connections open',
    );

    const past = await idleFrom(gw.proxyPort, HOG);
    expect(await closedWithin(past.closed, 2_000)).toEqual({ text: '' });
    for (const w of waiting) expect(w.socket.destroyed).toBe(false);
    expect(await gw.metrics()).toMatch(/^gateway_preauth_refusals_total 1$/m);

    // Another source, and the usual one, are served meanwhile.
    expect(await exchangeFrom(gw.proxyPort, OTHER, get)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await exchangeFrom(gw.proxyPort, '127.0.0.1', get)).toMatch(/^HTTP\/1\.1 200 /);
    // As the source's waiting connections close, its room comes back.
    waiting.pop()!.socket.destroy();
    await pollUntil(sockets, (s) => s.proxyClients === 2 + SHARE - 1, 5_000, 'one waiting connection gone');
    expect(await exchangeFrom(gw.proxyPort, HOG, get)).toMatch(/^HTTP\/1\.1 200 /);

    for (const w of waiting) w.socket.destroy();
    for (const t of tunnels) t.destroy();
    const after = await pollUntil(
      sockets,
      (s) => s.proxyClients === 0 && s.upstreams === 0,
      5_000,
      'no client or upstream socket left',
    );
    expect(after).toMatchObject({ proxyClients: 0, upstreams: 0 });
    // And the source's whole share is there again.
    const again = [];
    for (let i = 0; i < SHARE; i++) again.push(await idleFrom(gw.proxyPort, HOG));
    await pollUntil(sockets, (s) => s.proxyClients === SHARE, 5_000, 'the share open again');
    for (const a of again) expect(await closedWithin(a.closed, 200)).toBeNull();
    for (const a of again) a.socket.destroy();
    await pollUntil(sockets, (s) => s.proxyClients === 0, 5_000, 'all closed');
  });
});
