// The hard expiry of a snapshot's entries (contract seed §3: each proxy has "its capacity, hard expiry
// expires_at, and usable_until"): past usableUntil the worker picks the proxy for nothing new, and at
// expiresAt — the end of its ownership grant — it stops using it at all. Five seconds later (the
// controller's clock-skew allowance) the controller may hand the proxy to another worker (ownership.ts
// grantLapsed), so a tunnel of a worker cut off from the controller that ran on past its grant was the
// proxy's second owner. Standalone mode over a snapshot file whose grant ends a few seconds after start.
// The other bound on what runs on a proxy: once drained away from the worker (gone from its snapshot, or
// revoked), its open requests last GATEWAY_PROXY_DRAIN_TIMEOUT_MS at most (drain-bound.ts).
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  openTunnel,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { pollUntil } from '../support/poll.js';

const GRANT_MS = 6_000;
const DRAIN_MS = 3_000;

describe('gateway: the ownership grant is a hard expiry', () => {
  let targets: Targets;
  let upstream: ForwardProxy;
  let gw: GatewayProcess;
  let upstreamUrl: string;

  beforeAll(async () => {
    targets = await startTargets();
    upstream = createForwardProxy({ credentials: 'up:up-pass' });
    upstreamUrl = `http://up:up-pass@127.0.0.1:${(await upstream.listen()).port}`;
    gw = await startGateway(snapshotFile({ upstreams: [upstreamUrl], version: 1 }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${targets.httpPort}`,
      // Far past the grants below: a fetch that ends before this bound was ended by its proxy's grant.
      GATEWAY_FETCH_TIMEOUT_MS: '120000',
      GATEWAY_PROXY_DRAIN_TIMEOUT_MS: String(DRAIN_MS),
    });
  });

  /**
   * A /v1/fetch of the target's /stream (200, then a KiB every 20 ms for as long as it is read): when its
   * answer closed, its status and the bytes read. Destroyed after `bound` ms, with `error` if given.
   */
  const streamFetch = (bound: number, error?: Error) =>
    new Promise<{ at: number; status: number; bytes: number }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: gw.httpPort,
          method: 'POST',
          path: '/v1/fetch',
          headers: {
            'content-type': 'application/json',
            'proxy-authorization': basicAuth('crawler', 's3cret'),
          },
        },
        (res) => {
          let bytes = 0;
          res.on('data', (c: Buffer) => {
            bytes += c.length;
          });
          res.on('error', () => {});
          res.once('close', () => resolve({ at: Date.now(), status: res.statusCode!, bytes }));
        },
      );
      req.on('error', reject);
      setTimeout(() => req.destroy(error), bound);
      req.end(JSON.stringify({ url: `http://127.0.0.1:${targets.httpPort}/stream` }));
    });

  /** Loads `version`, whose grant ends GRANT_MS from now (SIGHUP re-reads the file); returns that end. */
  const loadShortGrant = async (version: number): Promise<number> => {
    const snap = snapshotFile({ upstreams: [upstreamUrl], version });
    const grantEnd = Date.now() + GRANT_MS;
    const end = new Date(grantEnd).toISOString();
    snap.validUntil = end;
    for (const p of snap.proxies) Object.assign(p, { expiresAt: end, usableUntil: end });
    writeFileSync(gw.snapshotPath, JSON.stringify(snap));
    gw.child.kill('SIGHUP');
    await pollUntil(
      gw.health,
      (h) => h.phase === 'fresh' && h.snapshot?.version === version,
      GRANT_MS / 2,
      `snapshot version ${version} applied`,
    );
    return grantEnd;
  };

  /**
   * Loads `version` with a grant ending `ms` from now, without waiting for anything to expire first; its
   * one proxy named `name` (another name is another proxy: the one before is drained away).
   */
  const loadGrant = async (version: number, ms: number, name?: string): Promise<void> => {
    const snap = snapshotFile({ upstreams: [upstreamUrl], version });
    const end = new Date(Date.now() + ms).toISOString();
    snap.validUntil = end;
    const usable = new Date(Date.now() + ms - 10_000).toISOString();
    for (const p of snap.proxies)
      Object.assign(p, { expiresAt: end, usableUntil: usable, ...(name ? { name } : {}) });
    writeFileSync(gw.snapshotPath, JSON.stringify(snap));
    gw.child.kill('SIGHUP');
    await pollUntil(
      gw.health,
      (h) => h.snapshot?.version === version,
      3_000,
      `snapshot version ${version} applied`,
    );
  };

  /**
   * A CONNECT tunnel through the gateway on its current proxy, left idle (well inside
   * GATEWAY_IDLE_TIMEOUT_MS, 5 min: only a bound under test can close it), counted active; returns a
   * wait for its close: the time it closed, or null if it was still open 15 s later.
   */
  const openIdleTunnel = async (): Promise<() => Promise<number | null>> => {
    const tunnel: net.Socket = await openTunnel(
      gw.proxyPort,
      `127.0.0.1:${targets.httpPort}`,
      basicAuth('crawler', 's3cret'),
    );
    const closedAt = new Promise<number>((resolve) => tunnel.once('close', () => resolve(Date.now())));
    tunnel.on('error', () => {});
    tunnel.resume();
    expect((await gw.health()).load.active).toBe(1);
    return () => Promise.race([closedAt, new Promise<null>((r) => setTimeout(() => r(null), 15_000))]);
  };

  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
    await targets?.close();
  });

  it('cuts the tunnels still open on its proxies once the grant has ended', async () => {
    const grantEnd = await loadShortGrant(2);
    const closedWithin15s = await openIdleTunnel();

    // Idle well inside GATEWAY_IDLE_TIMEOUT_MS (5 min): only the grant's end can close it.
    const closed = await closedWithin15s();
    expect(closed, 'the tunnel was still open 15 s after its proxy was granted').not.toBeNull();
    expect(closed!).toBeGreaterThanOrEqual(grantEnd);
    const h = await pollUntil(gw.health, (x) => x.load.active === 0, 5_000, 'the slot given back');
    expect(h.load).toEqual({ active: 0, reserved: 0 });
    expect(gw.logEntries().some((l) => l.event === 'gateway.grant_ended')).toBe(true);
  });

  it("ends a /v1/fetch whose body is still streaming once its proxy's grant has ended", async () => {
    const grantEnd = await loadShortGrant(3);
    // A bound of its own (an idle timeout would never fire: the body keeps coming).
    const closed = await streamFetch(15_000, new Error('still streaming 15 s after the grant was loaded'));
    expect(closed.status).toBe(200);
    expect(closed.bytes).toBeGreaterThan(0);
    expect(closed.at).toBeGreaterThanOrEqual(grantEnd);
    const h = await pollUntil(gw.health, (x) => x.load.active === 0, 5_000, 'the slot given back');
    expect(h.load).toEqual({ active: 0, reserved: 0 });
  });

  it('lets a /v1/fetch run on past its first grant when the grant is renewed meanwhile (a worker in touch)', async () => {
    // A worker in touch with the controller gets its grant renewed every tick, while a fetch may run for
    // up to GATEWAY_FETCH_TIMEOUT_MS (120 s here; any length is allowed): the end of the grant the proxy
    // was picked under is no end once a later snapshot has extended it.
    const grantEnd = await loadShortGrant(4);
    // Still streaming well past the first grant's end: the test ends it itself.
    const outcome = streamFetch(grantEnd - Date.now() + 4_000);
    await new Promise((r) => setTimeout(r, 1_000));
    await loadGrant(5, 60_000);
    const closed = await outcome;
    expect(closed.status).toBe(200);
    expect(closed.at, 'the fetch was cut at the end of a grant that had been renewed').toBeGreaterThanOrEqual(
      grantEnd + 3_500,
    );
    const h = await pollUntil(gw.health, (x) => x.load.active === 0, 5_000, 'the slot given back');
    expect(h.load).toEqual({ active: 0, reserved: 0 });
  });

  it('ends a /v1/fetch at the grant it was picked under when a later snapshot no longer lists its proxy', async () => {
    // The renewal above is for proxies still listed: one drained out of the snapshot is renewed no more,
    // so a fetch on it (which GATEWAY_PROXY_DRAIN_TIMEOUT_MS does not cut) still ends with that grant.
    const grantEnd = await loadShortGrant(8);
    const outcome = streamFetch(grantEnd - Date.now() + 8_000);
    await new Promise((r) => setTimeout(r, 1_000));
    await loadGrant(9, 60_000, 'p-successor');
    const closed = await outcome;
    expect(closed.status).toBe(200);
    expect(closed.at).toBeGreaterThanOrEqual(grantEnd);
    expect(closed.at, 'the fetch ran on past the grant of a proxy no longer listed').toBeLessThan(
      grantEnd + 4_000,
    );
    const h = await pollUntil(gw.health, (x) => x.load.active === 0, 5_000, 'the slot given back');
    expect(h.load).toEqual({ active: 0, reserved: 0 });
  });

  it('cuts a tunnel on a proxy drained away from it once GATEWAY_PROXY_DRAIN_TIMEOUT_MS has passed', async () => {
    await loadGrant(10, 120_000);
    const closedWithin15s = await openIdleTunnel();

    // The next snapshot has another proxy in its place: the tunnel's proxy is drained away from the
    // worker, and the controller waits for its counts to reach zero before it may go elsewhere.
    const cuts = () => gw.logEntries().filter((l) => l.event === 'gateway.drain_cut');
    const cutBefore = cuts().length;
    const drainedAt = Date.now();
    await loadGrant(11, 120_000, 'p-successor');
    const closed = await closedWithin15s();
    expect(closed, 'the tunnel was still open 15 s after its proxy was drained away').not.toBeNull();
    expect(closed! - drainedAt).toBeGreaterThanOrEqual(DRAIN_MS);
    const h = await pollUntil(gw.health, (x) => x.load.active === 0, 5_000, 'the slot given back');
    expect(h.load).toEqual({ active: 0, reserved: 0 });
    expect(cuts().slice(cutBefore)).toMatchObject([{ proxy: 'p-0-0', active: 1, drainTimeoutMs: DRAIN_MS }]);
  });

  it("ends a /v1/fetch at its grant's own length on a host clock behind the controller's", async () => {
    // The controller made this snapshot 30 s "from now" by this host's clock (the host runs 30 s behind):
    // its expiresAt is 36 s away on the wall clock, but the grant is 6 s long, and the controller hands the
    // proxy on 6 s (+ its 5 s skew allowance) after it made it. The fetch ended at the wall-clock expiresAt.
    const snap = snapshotFile({ upstreams: [upstreamUrl], version: 12 });
    const generatedAt = Date.now() + 30_000;
    const end = new Date(generatedAt + GRANT_MS).toISOString();
    snap.generatedAt = new Date(generatedAt).toISOString();
    snap.validUntil = end;
    for (const p of snap.proxies) Object.assign(p, { expiresAt: end, usableUntil: end });
    writeFileSync(gw.snapshotPath, JSON.stringify(snap));
    const loadedAt = Date.now();
    gw.child.kill('SIGHUP');
    await pollUntil(gw.health, (h) => h.snapshot?.version === 12, 3_000, 'snapshot version 12 applied');
    const closed = await streamFetch(20_000, new Error('still streaming 20 s after the grant was loaded'));
    expect(closed.status).toBe(200);
    expect(closed.bytes).toBeGreaterThan(0);
    expect(closed.at - loadedAt, 'the fetch ran on to the wall-clock expiresAt').toBeLessThan(
      GRANT_MS + 3_000,
    );
    expect(gw.logEntries().some((l) => l.event === 'gateway.clock_behind')).toBe(true);
  });

  it("cuts a tunnel at its proxy's own expiresAt while the snapshot's grant runs on", async () => {
    // Each entry has its own hard expiry (contract seed §3); nothing makes it the snapshot's validUntil.
    // The sweep cut tunnels at the grant only: this one ran on through the proxy past its expiresAt.
    const snap = snapshotFile({ upstreams: [upstreamUrl], version: 13 });
    const expiresAt = Date.now() + GRANT_MS;
    snap.validUntil = new Date(Date.now() + 120_000).toISOString();
    const end = new Date(expiresAt).toISOString();
    for (const p of snap.proxies) Object.assign(p, { expiresAt: end, usableUntil: end });
    writeFileSync(gw.snapshotPath, JSON.stringify(snap));
    gw.child.kill('SIGHUP');
    await pollUntil(
      gw.health,
      (h) => h.phase === 'fresh' && h.snapshot?.version === 13,
      3_000,
      'snapshot version 13 applied',
    );
    const events = (name: string) => gw.logEntries().filter((l) => l.event === name);
    const endedBefore = events('gateway.grant_ended').length;
    const expiredBefore = events('gateway.proxy_expired').length;
    const closedWithin15s = await openIdleTunnel();
    const closed = await closedWithin15s();
    expect(closed, "the tunnel was still open 15 s after its proxy's expiresAt was loaded").not.toBeNull();
    expect(closed!).toBeGreaterThanOrEqual(expiresAt);
    const h = await pollUntil(gw.health, (x) => x.load.active === 0, 5_000, 'the slot given back');
    expect(h.load).toEqual({ active: 0, reserved: 0 });
    expect(h.phase).toBe('fresh'); // the grant itself runs on
    expect(events('gateway.grant_ended')).toHaveLength(endedBefore);
    expect(events('gateway.proxy_expired').slice(expiredBefore)).toMatchObject([
      { proxy: 'p-0-0', expiresAt: end, active: 1 },
    ]);
  });
});
