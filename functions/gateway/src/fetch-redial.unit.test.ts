// /v1/fetch's redial (fetch-through.ts): after a refused dial the fetch goes again through another proxy
// of the route, picked at once — but the second attempt runs the guard again first, and a look-up (an
// uncached name) may outlast that proxy's use. One revoked during the look-up is not dialled, nor one a
// newer snapshot replaced meanwhile (its counters are forgotten with it). A fetch admitted before a
// shutdown is redialled on a snapshot still within its stale age, not past it. Real loopback sockets: a
// port nobody listens on, and a server that counts the connections it gets.
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { parseAllowList } from '../../../shared/src/domain/gateway/ssrf.js';
import { type GatewayProxy, sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { gatewayClocks } from '../../../test/support/gateway-clocks.js';
import { CredentialCache, StaticCredentialResolver } from './credentials.js';
import { type FetchDeps, fetchThrough } from './fetch-through.js';
import { jsonLogger } from './logger.js';
import type { GatewayRecorder } from './metrics.js';
import { newSocketCounts } from './sockets.js';
import { TargetGuard } from './target-guard.js';
import { UpstreamPool } from './upstream-pool.js';
import { GatewayWorker } from './worker.js';

const iso = (ms: number) => new Date(ms).toISOString();

describe('/v1/fetch redial', () => {
  let live: net.Server;
  let livePort: number;
  let deadPort: number;
  let connections = 0;
  /** Called as the live upstream takes a connection. */
  let onConnection = () => {};
  /** The listener of each redial counted (gateway_redials_total). */
  const redials: string[] = [];
  const open = new Set<net.Socket>();

  beforeAll(async () => {
    live = net.createServer((s) => {
      connections++;
      onConnection();
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {});
      s.end('HTTP/1.1 200 Connection established\r\n\r\n');
    });
    await new Promise<void>((r) => live.listen(0, '127.0.0.1', r));
    livePort = (live.address() as AddressInfo).port;
    const dead = net.createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    deadPort = (dead.address() as AddressInfo).port;
    await new Promise((r) => dead.close(r));
  });

  afterAll(async () => {
    for (const s of open) s.destroy();
    await new Promise((r) => live.close(r));
  });

  const proxy = (name: string, port: number, extra: Partial<GatewayProxy> = {}): GatewayProxy => ({
    name,
    host: '127.0.0.1',
    port,
    protocol: 'http',
    capacity: 5,
    expiresAt: iso(Date.now() + 3_600_000),
    usableUntil: iso(Date.now() + 3_000_000),
    attributes: {},
    credentialsRef: { secret: 'up', version: 'latest' },
    ...extra,
  });
  const snapshot = (version: number, proxies: GatewayProxy[]) =>
    buildSnapshot(
      {
        schemaVersion: 1,
        version,
        ownershipEpoch: 1,
        workerId: 'w1',
        generatedAt: iso(Date.now()),
        validUntil: iso(Date.now() + 600_000),
        // Round-robin from the first: the dead proxy is tried first.
        routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'round-robin' }],
        proxies,
      },
      sha256Hex,
    );

  async function deps(
    onLookup: (n: number) => void | Promise<void>,
    clock: { now: () => number; maxStaleAgeMs: number } = {
      now: Date.now,
      maxStaleAgeMs: Number.POSITIVE_INFINITY,
    },
    proxies: GatewayProxy[] = [proxy('a-dead', deadPort), proxy('b-live', livePort)],
  ): Promise<FetchDeps> {
    const creds = new StaticCredentialResolver();
    creds.replace({ up: { username: 'u', password: 'p' } });
    const worker = new GatewayWorker({
      credentials: new CredentialCache(creds, 60_000, Date.now),
      log: jsonLogger('error', () => {}),
      ...gatewayClocks(clock.now),
      maxStaleAgeMs: clock.maxStaleAgeMs,
      workerId: 'w1',
      stickyTableSize: 10,
      outcomeQueueSize: 10,
    });
    const first = snapshot(1, proxies);
    expect(await worker.applySnapshot(first)).toMatchObject({ ok: true });
    let lookups = 0;
    const sockets = newSocketCounts();
    const recorder: GatewayRecorder = {
      request() {},
      ssrfRefused() {},
      redialed: (listener) => redials.push(listener),
      outcomeDropped() {},
    };
    return {
      worker,
      // Every look-up goes to the resolver (no cache): the redial's too.
      guard: new TargetGuard(
        parseAllowList([]).allow,
        async () => {
          await onLookup(++lookups);
          return ['8.8.8.8']; // never dialled here: only named in the CONNECT
        },
        { ttlMs: 0, maxEntries: 10, now: Date.now },
      ),
      recorder,
      sockets,
      upstreamTimeoutMs: 2000,
      maxTimeoutMs: 3000,
      pool: new UpstreamPool(sockets, { idleMs: 0, maxIdlePerUpstream: 0 }),
    };
  }

  const request = { url: 'http://site.example/x', method: 'GET', headers: {}, bodyEncoding: 'utf8' } as const;

  it('a proxy revoked while the redial looked the name up again is not dialled', async () => {
    connections = 0;
    redials.length = 0;
    let worker: GatewayWorker | undefined;
    const d = await deps((n) => {
      if (n === 2) worker?.revokeProxyIds(['b-live']);
    });
    worker = d.worker;
    const result = await fetchThrough(request, 'crawler', d);
    expect(result).toMatchObject({ ok: false, status: 503, code: 'no_upstream' });
    expect(redials).toEqual(['fetch']);
    expect(connections).toBe(0);
  });

  it('a proxy a newer snapshot replaced while the redial looked the name up again is not dialled', async () => {
    connections = 0;
    redials.length = 0;
    let worker: GatewayWorker | undefined;
    // What the worker would report while the live upstream is being dialled.
    const reported: unknown[] = [];
    onConnection = () => reported.push(worker?.runtimeCounts());
    try {
      const d = await deps(async (n) => {
        // b-live leaves the snapshot (its zero counters with it); c-live, the same address, comes in.
        if (n === 2)
          expect(await worker?.applySnapshot(snapshot(2, [proxy('c-live', livePort)]))).toMatchObject({
            ok: true,
          });
      });
      worker = d.worker;
      const result = await fetchThrough(request, 'crawler', d);
      expect(result).toMatchObject({ ok: false, status: 502, code: 'target_failed', route: 'all' });
      expect(redials).toEqual(['fetch']);
      expect(connections).toBe(1);
      // The slot was reserved where the runtime report sees it: on the proxy of the current snapshot.
      expect(reported).toEqual([[{ proxy: 'c-live', active: 0, reserved: 1, draining: false }]]);
      expect(worker.runtimeCounts()).toEqual([]);
    } finally {
      onConnection = () => {};
    }
  });

  it('a snapshot that keeps both proxies, swapped in during the look-up, neither moves the redial nor brings back the failed one', async () => {
    // Every swap compiles new entries: the redial takes the current snapshot's b-live, and avoids its a-dead.
    connections = 0;
    redials.length = 0;
    let worker: GatewayWorker | undefined;
    const d = await deps(async (n) => {
      if (n === 2) {
        const again = snapshot(2, [proxy('a-dead', deadPort), proxy('b-live', livePort)]);
        expect(await worker?.applySnapshot(again)).toMatchObject({ ok: true });
      }
    });
    worker = d.worker;
    const result = await fetchThrough(request, 'crawler', d);
    expect(result).toMatchObject({ ok: false, status: 502, code: 'target_failed' });
    expect(redials).toEqual(['fetch']);
    expect(connections).toBe(1);
  });

  it('a proxy a snapshot swapped in during the look-up excluded from the route is not dialled', async () => {
    // Its target check fails through it (contract §6 TARGET): still in the snapshot, no longer the route's.
    connections = 0;
    redials.length = 0;
    let worker: GatewayWorker | undefined;
    const d = await deps(async (n) => {
      if (n === 2) {
        const excluded = snapshot(2, [
          proxy('a-dead', deadPort),
          proxy('b-live', livePort, { excludedRoutes: ['all'] }),
        ]);
        expect(await worker?.applySnapshot(excluded)).toMatchObject({ ok: true });
      }
    });
    worker = d.worker;
    const result = await fetchThrough(request, 'crawler', d);
    expect(result).toMatchObject({ ok: false, status: 503, code: 'no_upstream' });
    expect(redials).toEqual(['fetch']);
    expect(connections).toBe(0);
  });

  // A swap between the first pick and its failed dial (a snapshot every tick) compiles new entries for
  // every proxy: avoided by the object the first pick returned, the dead proxy was picked again — the one
  // redial spent on it, 502 although b-live was there. Two workers stand for before and after the swap.
  it('a snapshot swapped in during the first dial does not bring the failed proxy back for the redial', async () => {
    connections = 0;
    redials.length = 0;
    const d = await deps(() => {});
    const before = d.worker;
    const after = (await deps(() => {})).worker;
    expect(
      await after.applySnapshot(snapshot(2, [proxy('a-dead', deadPort), proxy('b-live', livePort)])),
    ).toMatchObject({ ok: true });
    let swapped = false;
    d.worker = new Proxy(before, {
      get(_t, key) {
        const w = swapped ? after : before;
        const v = Reflect.get(w, key, w);
        if (key === 'pick' && !swapped)
          return (...args: Parameters<GatewayWorker['pick']>) => {
            const picked = before.pick(...args);
            swapped = true;
            return picked;
          };
        return typeof v === 'function' ? v.bind(w) : v;
      },
      set(_t, key, value) {
        return Reflect.set(swapped ? after : before, key, value);
      },
    });
    const result = await fetchThrough(request, 'crawler', d);
    expect(result).toMatchObject({ ok: false, status: 502, code: 'target_failed' });
    expect(redials).toEqual(['fetch']);
    expect(connections).toBe(1);
  });

  it('one still usable after the look-up is dialled as picked', async () => {
    connections = 0;
    redials.length = 0;
    const d = await deps(() => {});
    const result = await fetchThrough(request, 'crawler', d);
    // The stand-in upstream grants the CONNECT and closes: the target's answer never comes.
    expect(result).toMatchObject({ ok: false, status: 502, code: 'target_failed' });
    expect(redials).toEqual(['fetch']);
    expect(connections).toBe(1);
    // The upstream socket is destroyed with the failure; its close event comes a tick later.
    for (let i = 0; i < 50 && d.sockets.upstreams > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(d.sockets.upstreams).toBe(0);
  });

  // A drain serves what it admitted (docs/gateway.md § Staleness and drain), a redial included — as the
  // proxy listener does — but never from a snapshot that outlived its stale age meanwhile: the rule a
  // request whose look-up came back picks by (worker.ts refusalAfterLookup). Before, /v1/fetch never
  // redialled once the worker was shutting down.
  it.each([
    ['within its stale age: redialled', 0, ['fetch'], 1, 'target_failed'],
    ['past its stale age, its grant not over: not redialled', 5_000, [], 0, 'upstream_dial_failed'],
  ])(
    'a fetch admitted before a shutdown whose first dial is refused, on a snapshot %s',
    async (_, aged, redialled, dialled, code) => {
      connections = 0;
      redials.length = 0;
      let worker: GatewayWorker | undefined;
      let offset = 0;
      const d = await deps(
        (n) => {
          if (n === 1) worker?.beginShutdown();
        },
        { now: () => Date.now() + offset, maxStaleAgeMs: 1_000 },
      );
      worker = d.worker;
      // The snapshot ages while the first dial is under way.
      const pick = worker.pick.bind(worker);
      worker.pick = (...args) => {
        const picked = pick(...args);
        offset = aged;
        return picked;
      };
      const result = await fetchThrough(request, 'crawler', d);
      expect(result).toMatchObject({ ok: false, status: 502, code });
      expect(redials).toEqual(redialled);
      expect(connections).toBe(dialled);
    },
  );

  // gateway_suspect_fallbacks_total counts requests sent to a SUSPECT upstream (docs/gateway.md § Metrics),
  // and an alert divides it by requests: a fetch that picks again counts once. Each pick counted, so one
  // fetch redialled between suspect proxies counted 2 (3 with a third pick after the look-up), exactly
  // when SUSPECT proxies fail and the alert matters.
  const suspect = { suspect: true } as const;

  it('a fetch redialled from one SUSPECT fallback to another counts one fallback', async () => {
    connections = 0;
    redials.length = 0;
    const d = await deps(() => {}, undefined, [
      proxy('a-dead', deadPort, suspect),
      proxy('b-live', livePort, suspect),
    ]);
    const result = await fetchThrough(request, 'crawler', d);
    expect(result).toMatchObject({ ok: false, status: 502, code: 'target_failed' });
    expect(redials).toEqual(['fetch']);
    expect(connections).toBe(1);
    expect(d.worker.suspectFallbacks).toBe(1);
  });

  it('a fetch that picks a third time (the redial’s proxy revoked during its look-up) still counts one', async () => {
    connections = 0;
    redials.length = 0;
    let w: GatewayWorker | undefined;
    const d = await deps(
      (n) => {
        if (n === 2) w?.revokeProxyIds(['b-live']);
      },
      undefined,
      [
        proxy('a-dead', deadPort, suspect),
        proxy('b-live', livePort, suspect),
        proxy('c-live', livePort, suspect),
      ],
    );
    w = d.worker;
    const result = await fetchThrough(request, 'crawler', d);
    expect(result).toMatchObject({ ok: false, status: 502, code: 'target_failed' });
    expect(redials).toEqual(['fetch']);
    expect(connections).toBe(1);
    expect(w.suspectFallbacks).toBe(1);
  });

  it('a fetch whose sound proxy refused the dial and whose redial falls back to a SUSPECT one counts one', async () => {
    // The sound proxy is avoided for the redial (its dial refused): going past it to the suspect one is a
    // fallback, though the sound one is still usable for other requests.
    connections = 0;
    redials.length = 0;
    const d = await deps(() => {}, undefined, [
      proxy('a-dead', deadPort),
      proxy('b-live', livePort, suspect),
    ]);
    const result = await fetchThrough(request, 'crawler', d);
    expect(result).toMatchObject({ ok: false, status: 502, code: 'target_failed' });
    expect(redials).toEqual(['fetch']);
    expect(connections).toBe(1);
    expect(d.worker.suspectFallbacks).toBe(1);
  });
});
