import { describe, expect, it } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { buildDelta } from '../../../shared/src/domain/gateway/delta.js';
import { headerStickyKey } from '../../../shared/src/domain/gateway/pick.js';
import {
  type GatewayProxy,
  type GatewaySnapshotContent,
  sha256Hex,
} from '../../../shared/src/messages/gateway-snapshot.js';
import { gatewayClocks } from '../../../test/support/gateway-clocks.js';
import { CredentialCache, StaticCredentialResolver } from './credentials.js';
import { jsonLogger } from './logger.js';
import type { PlainHttpSetting } from './plain-http.js';
import { GatewayWorker, STICKY_KEY_MAX_CHARS, stickyTableKey } from './worker.js';

const T0 = Date.UTC(2026, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString();
const proxy = (name: string, extra: Partial<GatewayProxy> = {}): GatewayProxy => ({
  name,
  host: '127.0.0.1',
  port: 3128,
  protocol: 'http',
  capacity: 2,
  expiresAt: iso(T0 + 3_600_000),
  usableUntil: iso(T0 + 3_000_000),
  attributes: {},
  credentialsRef: { secret: 'up', version: 'latest' },
  ...extra,
});
const content = (version: number, proxies: GatewayProxy[], epoch = 1): GatewaySnapshotContent => ({
  schemaVersion: 1,
  version,
  ownershipEpoch: epoch,
  workerId: 'w1',
  generatedAt: iso(T0),
  validUntil: iso(T0 + 600_000),
  routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' }],
  proxies,
});
const noSticky = { stickyValue: () => undefined, stickyOwner: () => '' };

/** A worker on two clocks the test moves apart: the wall clock and a monotonic one. */
function clockedWorker(wall: () => number, mono: () => number, proxyDrainTimeoutMs = 0): GatewayWorker {
  const creds = new StaticCredentialResolver();
  creds.replace({ up: { username: 'u', password: 'p' } });
  return new GatewayWorker({
    credentials: new CredentialCache(creds, 60_000, wall),
    log: jsonLogger('error', () => {}),
    now: wall,
    monotonicNow: mono,
    maxStaleAgeMs: 30_000,
    proxyDrainTimeoutMs,
    workerId: 'w1',
    stickyTableSize: 10,
    outcomeQueueSize: 10,
  });
}

function newWorker(queue = 10, plainHttp?: PlainHttpSetting) {
  let now = T0;
  const creds = new StaticCredentialResolver();
  creds.replace({ up: { username: 'u', password: 'p' } });
  const dropped: number[] = [];
  const worker = new GatewayWorker({
    credentials: new CredentialCache(creds, 60_000, () => now),
    log: jsonLogger('error', () => {}),
    ...gatewayClocks(() => now),
    maxStaleAgeMs: 30_000,
    workerId: 'w1',
    stickyTableSize: 10,
    outcomeQueueSize: queue,
    onOutcomeDropped: () => dropped.push(1),
    ...(plainHttp ? { plainHttp } : {}),
  });
  return { worker, dropped, creds, advance: (ms: number) => (now += ms) };
}

describe('GatewayWorker', () => {
  it('refuses traffic until a snapshot is applied, then routes with pre-computed upstream auth', async () => {
    const { worker } = newWorker();
    expect(worker.accepting).toBe(false);
    const r = await worker.applySnapshot(buildSnapshot(content(1, [proxy('a')]), sha256Hex));
    expect(r).toMatchObject({ ok: true, version: 1, duplicate: false });
    expect(worker.accepting).toBe(true);
    const picked = worker.pick('example.com', T0, noSticky);
    expect(picked.kind).toBe('ok');
    if (picked.kind === 'ok') expect(picked.upstream.auth.line).toBe('Proxy-Authorization: Basic dTpw\r\n');
  });

  it.each<[PlainHttpSetting | undefined, Record<string, boolean>]>([
    [undefined, { filters: true, open: false, legacy: false }],
    ['pinned', { filters: false, open: false, legacy: false }],
    ['absolute-uri', { filters: true, open: true, legacy: true }],
  ])('GATEWAY_PLAIN_HTTP=%s: absolute form per upstream %j', async (setting, expected) => {
    const { worker } = newWorker(10, setting);
    await worker.applySnapshot(
      buildSnapshot(
        content(1, [
          proxy('filters', { filtersDestinations: true }),
          proxy('open', { filtersDestinations: false }),
          proxy('legacy'),
        ]),
        sha256Hex,
      ),
    );
    const got = Object.fromEntries(
      [...worker.snapshot()!.upstreams].map(([name, u]) => [name, u.auth.absoluteUri]),
    );
    expect(got).toEqual(expected);
  });

  it('leaves out a proxy whose credentials cannot be resolved', async () => {
    const { worker } = newWorker();
    await worker.applySnapshot(
      buildSnapshot(
        content(1, [proxy('a', { credentialsRef: { secret: 'missing', version: 'latest' } }), proxy('b')]),
        sha256Hex,
      ),
    );
    expect([...worker.snapshot()!.upstreams.keys()]).toEqual(['b']);
  });

  it('applies a delta on its base, and asks for a full snapshot otherwise', async () => {
    const { worker } = newWorker();
    const v1 = buildSnapshot(content(1, [proxy('a'), proxy('b')]), sha256Hex);
    const v2 = buildSnapshot(content(2, [proxy('b'), proxy('c')]), sha256Hex);
    await worker.applySnapshot(v1);
    const delta = buildDelta(v1, v2, sha256Hex);
    expect(await worker.applyDelta({ ...delta, checksum: v1.checksum })).toEqual({
      ok: false,
      reason: 'checksum_mismatch',
      needFullSnapshot: true,
    });
    expect(await worker.applyDelta({ ...delta, baseVersion: 9, version: 10 })).toMatchObject({
      ok: false,
      reason: 'base_mismatch',
    });
    expect(await worker.applyDelta(delta)).toMatchObject({ ok: true, version: 2, checksum: v2.checksum });
    expect([...worker.snapshot()!.upstreams.keys()]).toEqual(['b', 'c']);
    expect(await worker.applyDelta(delta)).toMatchObject({ ok: true, duplicate: true });
    expect(await worker.applySnapshot(buildSnapshot(content(3, [], 0), sha256Hex))).toMatchObject({
      ok: false,
      reason: 'stale_epoch',
    });
  });

  it('excludedRoutes: the proxy leaves that route only, and a delta that changes it takes effect', async () => {
    const { worker } = newWorker();
    const routed = (version: number, proxies: GatewayProxy[]) =>
      buildSnapshot(
        {
          ...content(version, proxies),
          routing: [
            { name: 'r1', match: { hosts: ['one.example'] }, selector: {}, policy: 'round-robin' },
            { name: 'r2', match: { hosts: ['*'] }, selector: {}, policy: 'round-robin' },
          ],
        },
        sha256Hex,
      );
    const picks = (host: string) =>
      new Set(
        Array.from({ length: 6 }, () => {
          const r = worker.pick(host, T0, noSticky);
          return r.kind === 'ok' ? r.upstream.name : r.kind;
        }),
      );
    const v1 = routed(1, [proxy('a', { excludedRoutes: ['r1'] }), proxy('b')]);
    await worker.applySnapshot(v1);
    expect(picks('one.example')).toEqual(new Set(['b']));
    expect(picks('two.example')).toEqual(new Set(['a', 'b']));
    // Reachable again: the delta's upsert carries the entry without the field; b is excluded instead.
    const v2 = routed(2, [proxy('a'), proxy('b', { excludedRoutes: ['r1'] })]);
    const delta = buildDelta(v1, v2, sha256Hex);
    expect(delta.upserts.map((p) => p.name)).toEqual(['a', 'b']);
    expect(await worker.applyDelta(delta)).toMatchObject({ ok: true, version: 2, checksum: v2.checksum });
    expect(picks('one.example')).toEqual(new Set(['a']));
    expect(picks('two.example')).toEqual(new Set(['a', 'b']));
  });

  it.each(['round-robin', 'least-active'] as const)(
    '%s goes on round the proxies across snapshot swaps, not back to the first one at each',
    async (policy) => {
      // The controller sends a snapshot at least once a minute (the grant's renewal): a route picked
      // fewer times a minute than it has proxies sent every request to its first few, for good.
      const { worker } = newWorker();
      const names = ['a', 'b', 'c', 'd'];
      const used = new Set<string>();
      for (let version = 1; version <= 4; version++) {
        const c = content(
          version,
          names.map((n) => proxy(n)),
        );
        await worker.applySnapshot(
          buildSnapshot({ ...c, routing: [{ ...c.routing[0]!, policy }] }, sha256Hex),
        );
        const picked = worker.pick('example.com', T0, noSticky);
        if (picked.kind === 'ok') used.add(picked.upstream.name);
      }
      expect([...used].sort()).toEqual(names);
    },
  );

  it('keeps live counts across swaps and reports draining for proxies that left the snapshot', async () => {
    const { worker } = newWorker();
    await worker.applySnapshot(buildSnapshot(content(1, [proxy('a')]), sha256Hex));
    const p = worker.pick('x', T0, noSticky);
    if (p.kind !== 'ok') throw new Error('no pick');
    p.upstream.live.active++;
    await worker.applySnapshot(buildSnapshot(content(2, [proxy('b')]), sha256Hex));
    expect(worker.runtimeCounts()).toEqual([{ proxy: 'a', active: 1, reserved: 0, draining: true }]);
    p.upstream.live.active--;
    worker.tick();
    expect(worker.runtimeCounts()).toEqual([]);
  });

  // A proxy whose credentials cannot be read is left out of the compiled upstreams but still given to this
  // worker: updateDrains does not drain it, and the report must not say it drains either (a report cut
  // short keeps draining proxies first, and a proxy cut from it reads as idle to the controller).
  it('reports a proxy left out for unreadable credentials as given, not draining', async () => {
    const { worker } = newWorker();
    await worker.applySnapshot(buildSnapshot(content(1, [proxy('a')]), sha256Hex));
    const p = worker.pick('x', T0, noSticky);
    if (p.kind !== 'ok') throw new Error('no pick');
    p.upstream.live.active++;
    await worker.applySnapshot(
      buildSnapshot(
        content(2, [proxy('a', { credentialsRef: { secret: 'missing', version: 'latest' } })]),
        sha256Hex,
      ),
    );
    expect([...worker.snapshot()!.upstreams.keys()]).toEqual([]);
    expect(worker.runtimeCounts()).toEqual([{ proxy: 'a', active: 1, reserved: 0, draining: false }]);
  });

  it('revokeProxyIds stops new use at once', async () => {
    const { worker } = newWorker();
    await worker.applySnapshot(buildSnapshot(content(1, [proxy('a')]), sha256Hex));
    worker.revokeProxyIds(['a']);
    expect(worker.pick('x', T0, noSticky).kind).toBe('no_upstream');
  });

  it('a revoked proxy left out for its credentials stays revoked when a snapshot giving it compiles it', async () => {
    // Its counters went with the compile that left it out, so the revocation lived only in the answer's set:
    // the next snapshot that still gives it (a delayed one, before the one that takes it away) met it anew.
    const { worker, creds, advance } = newWorker();
    const late = { credentialsRef: { secret: 'late', version: 'latest' } };
    await worker.applySnapshot(buildSnapshot(content(1, [proxy('a'), proxy('x', late)]), sha256Hex));
    worker.revokeProxyIds(['x']);
    creds.replace({ up: { username: 'u', password: 'p' }, late: { username: 'u', password: 'q' } });
    advance(61_000); // past the credential cache's TTL: the secret is read again, and now resolves
    await worker.applySnapshot(buildSnapshot(content(2, [proxy('a'), proxy('x', late)]), sha256Hex));
    expect([...worker.snapshot()!.upstreams.keys()].sort()).toEqual(['a', 'x']);
    const picked = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const q = worker.pick('x', T0 + 61_000, noSticky);
      if (q.kind === 'ok') picked.add(q.upstream.name);
    }
    expect(picked).toEqual(new Set(['a']));
  });

  /**
   * A proxy picked, a tunnel open on it, revoked; the drain's snapshot (v11) leaves it out while the tunnel
   * runs on, and the next (v12) gives it back: the drain was cancelled.
   */
  async function drainCancelledWithTunnelOpen() {
    const { worker } = newWorker();
    await worker.applySnapshot(buildSnapshot(content(10, [proxy('a'), proxy('b')]), sha256Hex));
    const p = worker.pick('x', T0, noSticky);
    if (p.kind !== 'ok') throw new Error('no pick');
    const busy = p.upstream;
    busy.live.active++;
    worker.revokeProxyIds([busy.name]);
    const other = busy.name === 'a' ? 'b' : 'a';
    await worker.applySnapshot(buildSnapshot(content(11, [proxy(other)]), sha256Hex));
    await worker.applySnapshot(buildSnapshot(content(12, [proxy('a'), proxy('b')]), sha256Hex));
    return { worker, busy, other };
  }

  it('a drain the controller cancelled gives the proxy back (each answer is the whole revoked set)', async () => {
    const { worker, busy } = await drainCancelledWithTunnelOpen();
    worker.revokeProxyIds([]);
    busy.live.active--;
    worker.tick();
    const picked = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const q = worker.pick('x', T0, noSticky);
      if (q.kind === 'ok') picked.add(q.upstream.name);
    }
    expect(picked).toEqual(new Set(['a', 'b']));
    expect(worker.runtimeCounts()).toEqual([]);
  });

  it('a snapshot that gives back a proxy with a tunnel still open on it is the newer word, as for one whose counters were collected', async () => {
    // The tunnel still open and no report answered since v12.
    const { worker, busy, other } = await drainCancelledWithTunnelOpen();
    const q = worker.pick('x', T0, noSticky, worker.snapshot()!.upstreams.get(other));
    expect(q.kind === 'ok' && q.upstream.name).toBe(busy.name);
    expect(worker.runtimeCounts()).toEqual([{ proxy: busy.name, active: 1, reserved: 0, draining: false }]);
  });

  it('stops accepting once stale and again after a fresh snapshot', async () => {
    const { worker, advance } = newWorker();
    await worker.applySnapshot(buildSnapshot(content(1, [proxy('a')]), sha256Hex));
    advance(30_001);
    worker.tick();
    expect(worker.phase()).toBe('stale');
    expect(worker.accepting).toBe(false);
    await worker.applySnapshot(
      buildSnapshot({ ...content(2, [proxy('a')]), validUntil: iso(T0 + 900_000) }, sha256Hex),
    );
    expect(worker.accepting).toBe(true);
  });

  /** A worker on `clock` holding snapshot 1 (proxy a, the default grant) with one request open on a. */
  const workerWithOpenRequest = async (clock: { now: number }, proxyDrainTimeoutMs?: number) => {
    const lines: string[] = [];
    const creds = new StaticCredentialResolver();
    creds.replace({ up: { username: 'u', password: 'p' } });
    const worker = new GatewayWorker({
      credentials: new CredentialCache(creds, 60_000, () => clock.now),
      log: jsonLogger('info', (l) => lines.push(l)),
      ...gatewayClocks(() => clock.now),
      maxStaleAgeMs: 30_000,
      ...(proxyDrainTimeoutMs === undefined ? {} : { proxyDrainTimeoutMs }),
      workerId: 'w1',
      stickyTableSize: 10,
      outcomeQueueSize: 10,
    });
    await worker.applySnapshot(buildSnapshot(content(1, [proxy('a')]), sha256Hex));
    const picked = worker.pick('example.com', T0, noSticky);
    if (picked.kind !== 'ok') throw new Error('no pick');
    picked.upstream.live.active++;
    const events = (name: string) => lines.filter((l) => l.includes(`"event":"${name}"`));
    const ended = () => events('gateway.grant_ended');
    return { worker, ended, events, live: picked.upstream.live };
  };

  describe('a proxy drained away from the worker (GATEWAY_PROXY_DRAIN_TIMEOUT_MS)', () => {
    it('keeps its open requests for the bound, then is cut, logged once', async () => {
      const clock = { now: T0 };
      const { worker, events, live } = await workerWithOpenRequest(clock, 60_000);
      // The next snapshot leaves `a` out: it is drained away from that swap on; the open request carries on.
      clock.now = T0 + 1_000;
      await worker.applySnapshot(buildSnapshot(content(2, [proxy('b')]), sha256Hex));
      worker.tick();
      expect(live.drainingSinceMs).toBe(T0 + 1_000);
      clock.now = T0 + 61_000 - 1;
      worker.tick();
      expect(live.cut).toBe(false);
      clock.now = T0 + 61_000;
      worker.tick();
      worker.tick();
      expect(live.cut).toBe(true);
      expect(events('gateway.drain_cut')).toHaveLength(1);
      expect(JSON.parse(events('gateway.drain_cut')[0]!)).toMatchObject({
        proxy: 'a',
        active: 1,
        reserved: 0,
        drainTimeoutMs: 60_000,
      });
    });

    it('a revoked proxy is timed the same, and a revoke withdrawn un-cuts it', async () => {
      const clock = { now: T0 };
      const { worker, live } = await workerWithOpenRequest(clock, 60_000);
      worker.revokeProxyIds(['a']);
      worker.tick();
      clock.now = T0 + 60_000;
      worker.tick();
      expect(live.cut).toBe(true);
      worker.revokeProxyIds([]);
      worker.tick();
      expect(live).toMatchObject({ cut: false, drainingSinceMs: null });
    });

    it('a cut proxy given back is usable at once, not only from the next tick', async () => {
      // The sweep cuts sessions on a cut proxy every 250 ms; the tick runs every second. A request picking
      // the proxy in between must not be refused for a drain that is over.
      const clock = { now: T0 };
      const { worker, live } = await workerWithOpenRequest(clock, 60_000);
      await worker.applySnapshot(buildSnapshot(content(2, [proxy('b')]), sha256Hex));
      worker.tick();
      clock.now = T0 + 60_000;
      worker.tick();
      expect(live.cut).toBe(true);
      await worker.applySnapshot(buildSnapshot(content(3, [proxy('a')]), sha256Hex));
      expect(live).toMatchObject({ cut: false, drainingSinceMs: null });
      worker.revokeProxyIds(['a']);
      worker.tick();
      clock.now = T0 + 120_000;
      worker.tick();
      expect(live.cut).toBe(true);
      worker.revokeProxyIds([]);
      expect(live).toMatchObject({ cut: false, drainingSinceMs: null });
    });

    it('a proxy the snapshot still gives the worker is not drained when its credentials cannot be read', async () => {
      // Left out at compile (a pinned version the gateway cannot read yet): no new request may pick it, but the
      // controller still has it owned here, not draining — nothing waits for its counts, and the tunnels open
      // under the credentials read before carry on as they did before the drain bound.
      const clock = { now: T0 };
      const { worker, live, events } = await workerWithOpenRequest(clock, 60_000);
      clock.now = T0 + 1_000;
      await worker.applySnapshot(
        buildSnapshot(
          content(2, [proxy('a', { credentialsRef: { secret: 'missing', version: '7' } })]),
          sha256Hex,
        ),
      );
      expect(worker.pick('example.com', clock.now, noSticky).kind).not.toBe('ok');
      worker.tick();
      clock.now = T0 + 120_000;
      worker.tick();
      expect(live).toMatchObject({ cut: false, drainingSinceMs: null });
      expect(events('gateway.drain_cut')).toHaveLength(0);
    });

    it('a proxy still in the snapshot and not revoked is never cut, nor any with the bound at 0', async () => {
      const clock = { now: T0 };
      const kept = await workerWithOpenRequest(clock, 60_000);
      const unbounded = await workerWithOpenRequest(clock, 0);
      unbounded.worker.revokeProxyIds(['a']);
      kept.worker.tick();
      unbounded.worker.tick();
      clock.now = T0 + 24 * 3_600_000;
      kept.worker.tick();
      unbounded.worker.tick();
      expect(kept.live).toMatchObject({ cut: false, drainingSinceMs: null });
      expect(unbounded.live).toMatchObject({ cut: false, drainingSinceMs: T0 });
      expect(unbounded.events('gateway.drain_cut')).toHaveLength(0);
    });
  });

  it('its grant ends at validUntil (contract seed §3 hard expiry): grantOver, logged once while requests are open', async () => {
    const clock = { now: T0 };
    const { worker, ended } = await workerWithOpenRequest(clock);
    // Stale by age long before: new traffic stops, but the proxies are still this worker's.
    clock.now = T0 + 600_000 - 1;
    worker.tick();
    expect(worker.phase()).toBe('stale');
    expect(worker.grantOver).toBe(false);
    clock.now = T0 + 600_000;
    worker.tick();
    worker.tick();
    expect(worker.grantOver).toBe(true);
    expect(ended()).toHaveLength(1);
    expect(JSON.parse(ended()[0]!)).toMatchObject({ active: 1, reserved: 0, validUntil: iso(T0 + 600_000) });
    // A renewed grant (the next snapshot) gives the proxies back.
    await worker.applySnapshot(
      buildSnapshot({ ...content(2, [proxy('a')]), validUntil: iso(clock.now + 180_000) }, sha256Hex),
    );
    expect(worker.grantOver).toBe(false);
  });

  it('a snapshot taken with its grant already over logs grant_ended once while requests are open', async () => {
    const clock = { now: T0 };
    const { worker, ended } = await workerWithOpenRequest(clock);
    // Delivered late: its grant ended before it arrived (the tick has not run since).
    clock.now = T0 + 10_000;
    await worker.applySnapshot(
      buildSnapshot({ ...content(2, [proxy('a')]), validUntil: iso(T0 + 5_000) }, sha256Hex),
    );
    expect(worker.grantOver).toBe(true);
    worker.tick();
    expect(ended()).toHaveLength(1);
    expect(JSON.parse(ended()[0]!)).toMatchObject({ active: 1, validUntil: iso(T0 + 5_000) });
  });

  describe("a proxy's own hard expiry (expiresAt before the snapshot's validUntil)", () => {
    // Contract seed §3: each entry has its own hard expiry; nothing makes it the snapshot's validUntil.
    // The listener's sweep cut sessions at the grant only, so a tunnel ran on past its proxy's expiresAt.
    const short = (version: number, names: string[], expiresAt: number) =>
      buildSnapshot(
        content(
          version,
          names.map((n) => proxy(n, { expiresAt: iso(expiresAt), usableUntil: iso(expiresAt - 10_000) })),
        ),
        sha256Hex,
      );
    const opened = async (wall: () => number, mono: () => number, lines: string[]) => {
      const creds = new StaticCredentialResolver();
      creds.replace({ up: { username: 'u', password: 'p' } });
      const worker = new GatewayWorker({
        credentials: new CredentialCache(creds, 60_000, wall),
        log: jsonLogger('info', (l) => lines.push(l)),
        now: wall,
        monotonicNow: mono,
        maxStaleAgeMs: Number.POSITIVE_INFINITY,
        workerId: 'w1',
        stickyTableSize: 10,
        outcomeQueueSize: 10,
      });
      await worker.applySnapshot(short(1, ['a', 'b'], T0 + 60_000)); // validUntil T0 + 600 s
      const picked = worker.pick('example.com', wall(), noSticky);
      if (picked.kind !== 'ok') throw new Error('no pick');
      picked.upstream.live.active++;
      return { worker, name: picked.upstream.name, live: picked.upstream.live };
    };

    it('marks the proxy expired at its expiresAt (the grant runs on), logged once while it has requests open', async () => {
      const lines: string[] = [];
      let now = T0;
      const { worker, name } = await opened(
        () => now,
        () => now,
        lines,
      );
      now = T0 + 60_000 - 1;
      worker.tick();
      expect(worker.expiredProxies.size).toBe(0);
      now = T0 + 60_000;
      worker.tick();
      worker.tick();
      expect([...worker.expiredProxies].sort()).toEqual(['a', 'b']);
      expect(worker.grantOver).toBe(false);
      const logged = lines
        .filter((l) => l.includes('"event":"gateway.proxy_expired"'))
        .map((l) => JSON.parse(l));
      expect(logged).toEqual([
        expect.objectContaining({ severity: 'WARNING', proxy: name, expiresAt: iso(T0 + 60_000), active: 1 }),
      ]);
      // A later snapshot renewing it gives it back at once, not at the next tick.
      await worker.applySnapshot(short(2, ['a', 'b'], T0 + 240_000));
      expect(worker.expiredProxies.size).toBe(0);
    });

    it('an expiresAt equal to validUntil (as the snapshot function sets it) ends with the grant, said once by grant_ended', async () => {
      const lines: string[] = [];
      let now = T0;
      const { worker } = await opened(
        () => now,
        () => now,
        lines,
      );
      await worker.applySnapshot(
        buildSnapshot(
          {
            ...content(2, [
              proxy('a', { expiresAt: iso(T0 + 60_000), usableUntil: iso(T0 + 50_000) }),
              proxy('b', { expiresAt: iso(T0 + 60_000), usableUntil: iso(T0 + 50_000) }),
            ]),
            validUntil: iso(T0 + 60_000),
          },
          sha256Hex,
        ),
      );
      now = T0 + 60_000;
      worker.tick();
      expect(worker.grantOver).toBe(true);
      expect(worker.expiredProxies.size).toBe(2);
      const events = lines.map((l) => JSON.parse(l).event).filter(Boolean);
      expect(events.filter((e) => e === 'gateway.grant_ended')).toHaveLength(1);
      expect(events.filter((e) => e === 'gateway.proxy_expired')).toHaveLength(0);
    });

    it('a proxy drained out of the snapshot is left to the grant and the drain bound, not its last expiry', async () => {
      // Its last listing's expiresAt is a grant renewed minutes ago: cutting at it would end every drain at
      // 90–180 s whatever GATEWAY_PROXY_DRAIN_TIMEOUT_MS said, while the controller keeps the proxy this
      // worker's until its counts reach zero or the worker's own grant lapses.
      let now = T0;
      const { worker, name } = await opened(
        () => now,
        () => now,
        [],
      );
      const other = name === 'a' ? 'b' : 'a';
      now = T0 + 10_000;
      await worker.applySnapshot(short(2, [name, other], T0 + 90_000)); // renewed to 90 s
      await worker.applySnapshot(short(3, [other], T0 + 240_000)); // then drained away, still open
      for (const at of [90_000, 239_999]) {
        now = T0 + at;
        worker.tick();
        expect(worker.expiredProxies.has(name), String(at)).toBe(false);
        expect(worker.grantOver).toBe(false); // the grant runs on: it alone ends what is still open
      }
    });

    it("on a host clock behind the controller's, at most the entry's own length after the take (monotonic)", async () => {
      // 30 s behind: generated at T0 with 60 s left, its expiresAt reads as 90 s away on the wall clock.
      let wall = T0 - 30_000;
      let mono = 1_000;
      const { worker } = await opened(
        () => wall,
        () => mono,
        [],
      );
      wall += 59_999;
      mono += 59_999;
      worker.tick();
      expect(worker.expiredProxies.size).toBe(0);
      wall += 1;
      mono += 1;
      worker.tick();
      expect(worker.expiredProxies.size).toBe(2);
    });
  });

  it('a snapshot that arrives with its grant over is logged at ERROR, idle or not, each time (a clock ahead)', async () => {
    // A host clock minutes ahead of the controller's: every snapshot is ACKed and serves nothing, and an
    // idle worker logged nothing (grant_ended needs something open) while it looked live to the controller.
    const lines: Array<Record<string, unknown>> = [];
    const clock = { now: T0 + 700_000 };
    const creds = new StaticCredentialResolver();
    creds.replace({ up: { username: 'u', password: 'p' } });
    const worker = new GatewayWorker({
      credentials: new CredentialCache(creds, 60_000, () => clock.now),
      log: jsonLogger('info', (l) => lines.push(JSON.parse(l) as Record<string, unknown>)),
      ...gatewayClocks(() => clock.now),
      maxStaleAgeMs: 30_000,
      workerId: 'w1',
      stickyTableSize: 10,
      outcomeQueueSize: 10,
    });
    const expired = () => lines.filter((l) => l.event === 'gateway.snapshot_expired_on_arrival');
    const first = buildSnapshot(content(1, [proxy('a')]), sha256Hex); // validUntil T0 + 600 s
    expect(await worker.applySnapshot(first)).toMatchObject({ ok: true, duplicate: false });
    expect(worker.accepting).toBe(false);
    expect(expired()).toHaveLength(1);
    expect(expired()[0]).toMatchObject({
      severity: 'ERROR',
      version: 1,
      validUntil: iso(T0 + 600_000),
      now: iso(T0 + 700_000),
      lateBySeconds: 100,
    });
    await worker.applySnapshot(first); // a re-delivery: nothing taken, nothing said again
    await worker.applySnapshot(buildSnapshot(content(2, [proxy('a')]), sha256Hex));
    expect(expired().map((l) => l.version)).toEqual([1, 2]);
    // One the clock has not passed: nothing logged, traffic taken.
    await worker.applySnapshot(
      buildSnapshot({ ...content(3, [proxy('a')]), validUntil: iso(clock.now + 180_000) }, sha256Hex),
    );
    expect(expired()).toHaveLength(2);
    expect(worker.accepting).toBe(true);
  });

  it("a host clock behind the controller's: the grant ends a whole grant after the take, logged per snapshot", async () => {
    // 30 s behind: a snapshot generated at T0 with a 180 s grant reads as having 210 s left. The controller
    // hands the proxies over at T0 + 180 s (plus its 5 s skew allowance): held 30 s longer, two owners.
    const lines: Array<Record<string, unknown>> = [];
    let wall = T0 - 30_000;
    let mono = 5_000;
    const creds = new StaticCredentialResolver();
    creds.replace({ up: { username: 'u', password: 'p' } });
    const worker = new GatewayWorker({
      credentials: new CredentialCache(creds, 60_000, () => wall),
      log: jsonLogger('info', (l) => lines.push(JSON.parse(l) as Record<string, unknown>)),
      now: () => wall,
      monotonicNow: () => mono,
      maxStaleAgeMs: Number.POSITIVE_INFINITY,
      workerId: 'w1',
      stickyTableSize: 10,
      outcomeQueueSize: 10,
    });
    const behind = () => lines.filter((l) => l.event === 'gateway.clock_behind');
    const first = buildSnapshot({ ...content(1, [proxy('a')]), validUntil: iso(T0 + 180_000) }, sha256Hex);
    await worker.applySnapshot(first);
    expect(worker.accepting).toBe(true);
    expect(behind()).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        version: 1,
        generatedAt: iso(T0),
        now: iso(T0 - 30_000),
        behindBySeconds: 30,
      }),
    ]);
    await worker.applySnapshot(first); // a re-delivery: nothing taken, nothing said again
    expect(behind()).toHaveLength(1);
    const advance = (ms: number) => {
      wall += ms;
      mono += ms;
      worker.tick();
    };
    advance(179_999);
    expect(worker.grantOver).toBe(false);
    advance(1);
    expect(worker.grantOver).toBe(true);
    expect(worker.phase()).toBe('stale');
  });

  it('a wall clock stepped back neither stretches the stale age nor the grant (monotonic clock)', async () => {
    let wall = T0;
    let mono = 5_000;
    const worker = clockedWorker(
      () => wall,
      () => mono,
    );
    await worker.applySnapshot(buildSnapshot(content(1, [proxy('a')]), sha256Hex));
    expect(worker.accepting).toBe(true);
    // 31 s pass; meanwhile NTP steps the wall clock back an hour.
    mono += 31_000;
    wall += 31_000 - 3_600_000;
    worker.tick();
    expect(worker.phase()).toBe('stale');
    // A fresh snapshot brings it back; and its validUntil (10 min on) ends it 10 min on, whatever the step.
    const renewed = { generatedAt: iso(wall), validUntil: iso(wall + 600_000) };
    await worker.applySnapshot(buildSnapshot({ ...content(2, [proxy('a')]), ...renewed }, sha256Hex));
    expect(worker.accepting).toBe(true);
    worker.setMaxStaleAge(Number.POSITIVE_INFINITY);
    mono += 600_000;
    wall += 600_000 - 3_600_000;
    worker.tick();
    expect(worker.phase()).toBe('stale');
  });

  it("a wall clock stepped back neither holds off a drain's cut nor the stale age after it (monotonic clock)", async () => {
    let wall = T0;
    let mono = 5_000;
    const worker = clockedWorker(
      () => wall,
      () => mono,
      60_000,
    );
    await worker.applySnapshot(buildSnapshot(content(1, [proxy('a')]), sha256Hex));
    const picked = worker.pick('example.com', wall, noSticky);
    if (picked.kind !== 'ok') throw new Error('no pick');
    picked.upstream.live.active++;
    // Renewed within the stale age (a snapshot every 20 s), each leaving `a` out: drained from the first on.
    const renew = async (version: number) => {
      const at = { generatedAt: iso(wall), validUntil: iso(wall + 600_000) };
      await worker.applySnapshot(buildSnapshot({ ...content(version, [proxy('b')]), ...at }, sha256Hex));
    };
    await renew(2);
    mono += 20_000;
    wall += 20_000;
    await renew(3);
    mono += 20_000;
    wall += 20_000;
    await renew(4); // the last snapshot taken, before the step: its stale age spans the step
    worker.tick();
    expect(picked.upstream.live.cut).toBe(false);
    mono += 20_000;
    wall += 20_000 - 3_600_000; // NTP steps the wall clock back an hour meanwhile
    worker.tick();
    // 60 s into the drain on the monotonic clock: cut, though the wall clock reads an hour before it began.
    expect(picked.upstream.live.cut).toBe(true);
    expect(worker.phase()).toBe('fresh');
    mono += 10_001; // 30 s since the last snapshot taken on the monotonic clock; on the wall clock, -59 min
    wall += 10_001;
    worker.tick();
    expect(worker.phase()).toBe('stale');
  });

  it('a wall clock stepped forward does not age a snapshot just taken past the stale bound', async () => {
    let wall = T0;
    let mono = 5_000;
    const worker = clockedWorker(
      () => wall,
      () => mono,
    );
    await worker.applySnapshot(
      buildSnapshot({ ...content(1, [proxy('a')]), validUntil: iso(T0 + 7_200_000) }, sha256Hex),
    );
    mono += 1_000;
    wall += 1_000 + 60_000; // stepped forward a minute: still well within validUntil
    worker.tick();
    expect(worker.phase()).toBe('fresh');
  });

  it('drops outcomes (counted) when the queue is full, never blocking', () => {
    const { worker, dropped } = newWorker(2);
    const o = {
      proxy: 'a',
      route: 'all',
      stage: 'DIAL' as const,
      ok: false,
      latencyMs: 1,
      target: 't:1',
      at: T0,
    };
    for (let i = 0; i < 5; i++) worker.recordOutcome(o);
    expect(worker.outcomes.size).toBe(2);
    expect(dropped).toHaveLength(3);
    expect(worker.takeOutcomes(10)).toHaveLength(2);
  });
});

describe('sticky keys', () => {
  it('keeps a long value as a fixed-size digest: a client cannot fill the table with 16 KiB keys', () => {
    const short = 's'.repeat(STICKY_KEY_MAX_CHARS);
    expect(stickyTableKey(short)).toBe(short);
    expect(stickyTableKey(undefined)).toBeUndefined();
    const long = 'x'.repeat(16_384);
    const key = stickyTableKey(long)!;
    expect(key).toHaveLength(STICKY_KEY_MAX_CHARS + 1); // '#' and 64 hex digits: never a short value
    expect(stickyTableKey(long)).toBe(key);
    expect(stickyTableKey(`${long}y`)).not.toBe(key);
  });

  /** One route for every host, sticky on the x-session header. */
  const routing = [
    {
      name: 'all',
      match: { hosts: ['*'] },
      selector: {},
      policy: 'sticky' as const,
      stickyKey: { header: 'x-session' },
    },
  ];

  it('a long value still pins its requests to one proxy', async () => {
    const { worker } = newWorker();
    await worker.applySnapshot(
      buildSnapshot({ ...content(1, [proxy('a'), proxy('b'), proxy('c')]), routing }, sha256Hex),
    );
    const session = (v: string) => ({ stickyValue: () => v, stickyOwner: () => 'u' });
    const pickFor = (v: string) => {
      const r = worker.pick('example.com', T0, session(v));
      if (r.kind !== 'ok') throw new Error(r.kind);
      return r.upstream.name;
    };
    const long = 'z'.repeat(10_000);
    const first = pickFor(long);
    for (let i = 0; i < 5; i++) expect(pickFor(long)).toBe(first);
    expect(worker.stickyEntries()).toBe(1);
    // What the table holds is the digest, not the 10,000 characters (private: element access).
    const keys = [...worker['sticky']['owners'].get('u')!.keys()] as string[];
    expect(keys).toEqual([`all\n${stickyTableKey(long)}`]);
  });

  it('a header value is one client user’s: another sending it neither shares that pin nor moves it', async () => {
    const { worker } = newWorker();
    await worker.applySnapshot(
      buildSnapshot(
        { ...content(1, [proxy('a', { capacity: 1 }), proxy('b', { capacity: 1 })]), routing },
        sha256Hex,
      ),
    );
    // As the proxy listener and /v1/fetch hand it over: the user's name and the header's value.
    const pick = (user: string) => {
      const r = worker.pick('example.com', T0, {
        stickyValue: () => headerStickyKey(user, 'bob-42'),
        stickyOwner: () => user,
      });
      if (r.kind !== 'ok') throw new Error(r.kind);
      return r.upstream;
    };
    const bobs = pick('bob');
    bobs.live.active = 1; // bob's tunnel: the proxy full at capacity 1
    const mallorys = pick('mallory');
    expect(mallorys.name).not.toBe(bobs.name);
    mallorys.live.active = 1; // mallory fills her own
    bobs.live.active = 0;
    expect(pick('bob').name).toBe(bobs.name);
  });
});

describe('GatewayWorker: a duplicate snapshot', () => {
  it('is ACKed but does not reset the stale-age clock: only a snapshot obtained does', async () => {
    const { worker, advance } = newWorker();
    const s = buildSnapshot(content(1, [proxy('a')]), sha256Hex);
    await worker.applySnapshot(s);
    expect(worker.phase()).toBe('fresh');
    for (let i = 0; i < 2; i++) {
      advance(20_000);
      expect(await worker.applySnapshot(s)).toMatchObject({ ok: true, duplicate: true });
      worker.tick();
    }
    // 40 s after the only snapshot obtained, max stale age 30 s: stale, whatever came again meanwhile
    expect(worker.phase()).not.toBe('fresh');
    expect(worker.accepting).toBe(false);
    // a new version is obtained: fresh again
    expect(await worker.applySnapshot(buildSnapshot(content(2, [proxy('a')]), sha256Hex))).toMatchObject({
      ok: true,
      duplicate: false,
    });
    expect(worker.phase()).toBe('fresh');
  });
});

describe('GatewayWorker: taking a snapshot in slices', () => {
  const many = (n: number) => Array.from({ length: n }, (_, i) => proxy(`p-${String(i).padStart(5, '0')}`));

  /** A worker whose pause between slices runs `between` (what the event loop would run meanwhile). */
  function slicedWorker(between: (w: GatewayWorker) => void) {
    const creds = new StaticCredentialResolver();
    creds.replace({ up: { username: 'u', password: 'p' } });
    let pauses = 0;
    const worker: GatewayWorker = new GatewayWorker({
      credentials: new CredentialCache(creds, 60_000, () => T0),
      log: jsonLogger('error', () => {}),
      ...gatewayClocks(() => T0),
      maxStaleAgeMs: 30_000,
      workerId: 'w1',
      stickyTableSize: 10,
      outcomeQueueSize: 10,
      pause: async () => {
        pauses++;
        between(worker);
      },
    });
    return { worker, pauses: () => pauses };
  }

  it('requests go on picking from the snapshot in use between the slices; the new one is swapped in whole', async () => {
    const seen: Array<{ version: number | undefined; picked: string }> = [];
    const { worker, pauses } = slicedWorker((w) => {
      const p = w.pick('example.com', T0, noSticky);
      seen.push({ version: w.snapshot()?.version, picked: p.kind === 'ok' ? p.upstream.name : p.kind });
    });
    const s1 = buildSnapshot(content(1, [proxy('a')]), sha256Hex);
    await worker.applySnapshot(s1);
    seen.length = 0;
    const before = pauses();
    const s2 = buildSnapshot(content(2, many(1_200)), sha256Hex);
    expect(await worker.applySnapshot(s2)).toMatchObject({ ok: true, version: 2 });
    // The checksum's slices and the compile's, each of 1,200 entries in slices of 500.
    expect(pauses() - before).toBeGreaterThanOrEqual(4);
    expect(new Set(seen.map((s) => JSON.stringify(s)))).toEqual(
      new Set([JSON.stringify({ version: 1, picked: 'a' })]),
    );
    expect(worker.snapshot()?.upstreams.size).toBe(1_200);

    // A delta is verified and compiled in slices as well.
    seen.length = 0;
    const s3 = buildSnapshot(content(3, many(1_201)), sha256Hex);
    expect(await worker.applyDelta(buildDelta(s2, s3, sha256Hex))).toMatchObject({ ok: true, version: 3 });
    expect(seen.length).toBeGreaterThanOrEqual(4);
    expect(seen.every((s) => s.version === 2)).toBe(true);
  });

  it('a revocation answered while a snapshot is taken reaches the proxies it meets first', async () => {
    // One report answer (the whole revoked set), at the first pause: while the checksum is verified.
    let answered = false;
    const { worker } = slicedWorker((w) => {
      if (!answered) w.revokeProxyIds(['p-01100']);
      answered = true;
    });
    await worker.applySnapshot(buildSnapshot(content(1, many(1_200)), sha256Hex));
    expect(worker.snapshot()?.upstreams.get('p-01100')?.live.revoked).toBe(true);
    expect(worker.snapshot()?.upstreams.get('p-01099')?.live.revoked).toBe(false);
  });

  it('one answered before the take began does not hold back a proxy the snapshot gives back', async () => {
    // A drain the controller has cancelled since: its last answer still named the proxy, whose counters
    // were collected meanwhile; the snapshot that gives it back is the newer word.
    const { worker } = slicedWorker(() => {});
    worker.revokeProxyIds(['p-01100']);
    await worker.applySnapshot(buildSnapshot(content(1, many(1_200)), sha256Hex));
    expect(worker.snapshot()?.upstreams.get('p-01100')?.live.revoked).toBe(false);
  });

  it('a revocation answered while a snapshot is taken holds back a proxy it gives back with requests still open', async () => {
    // Counters kept in `live` by what is open on them meet the answer at once, as those first met meet it
    // at the swap: an answer during the take is newer than the snapshot.
    let answer: string[] | null = null;
    const { worker } = slicedWorker((w) => {
      if (answer) w.revokeProxyIds(answer);
      answer = null;
    });
    const fleet = many(1_200);
    await worker.applySnapshot(buildSnapshot(content(1, fleet), sha256Hex));
    const busy = worker.snapshot()!.upstreams.get('p-01100')!;
    busy.live.active++;
    worker.revokeProxyIds(['p-01100']);
    await worker.applySnapshot(buildSnapshot(content(2, fleet.slice(0, 1_100)), sha256Hex));
    answer = ['p-01100'];
    await worker.applySnapshot(buildSnapshot(content(3, fleet), sha256Hex));
    expect(worker.snapshot()?.upstreams.get('p-01100')?.live.revoked).toBe(true);
    expect(worker.runtimeCounts()).toEqual([{ proxy: 'p-01100', active: 1, reserved: 0, draining: true }]);
  });

  it('a tick between the slices leaves the counters of proxies first met in place: revoking them works', async () => {
    const { worker } = slicedWorker((w) => w.tick());
    await worker.applySnapshot(buildSnapshot(content(1, [proxy('a')]), sha256Hex));
    const fleet = many(1_200);
    await worker.applySnapshot(buildSnapshot(content(2, fleet), sha256Hex));
    worker.revokeProxyIds(fleet.map((p) => p.name));
    expect(worker.pick('example.com', T0, noSticky).kind).toBe('no_upstream');
    worker.revokeProxyIds([]);
    const p = worker.pick('example.com', T0, noSticky);
    if (p.kind !== 'ok') throw new Error('no pick');
    p.upstream.live.active++;
    expect(worker.runtimeCounts()).toEqual([
      { proxy: p.upstream.name, active: 1, reserved: 0, draining: false },
    ]);
  });
});
