// What an operator sees of the SUSPECT preference (docs/gateway.md § Metrics): how many upstreams the applied
// snapshot marks suspect (gateway_suspect_upstreams, /healthz snapshot.suspect) and how many requests fell
// back to one because no sound upstream was usable (gateway_suspect_fallbacks_total). The gateway as
// gateway.ts wires it, with a source that hands it one snapshot, read back over its own HTTP listener.
import { describe, expect, it } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import {
  type GatewayProxy,
  type GatewayRoute,
  type GatewaySnapshot,
  type GatewaySnapshotContent,
  sha256Hex,
} from '../../../shared/src/messages/gateway-snapshot.js';
import { gatewayClocks } from '../../../test/support/gateway-clocks.js';
import { startStandaloneGateway } from '../../../test/support/standalone-gateway.js';
import { CredentialCache, StaticCredentialResolver } from './credentials.js';
import { jsonLogger } from './logger.js';
import { GatewayWorker, type PickResult } from './worker.js';

const iso = (ms: number) => new Date(ms).toISOString();
const proxy = (name: string, nowMs: number, extra: Partial<GatewayProxy> = {}): GatewayProxy => ({
  name,
  host: '127.0.0.1',
  port: 3128,
  protocol: 'http',
  capacity: 1,
  expiresAt: iso(nowMs + 3_600_000),
  usableUntil: iso(nowMs + 3_000_000),
  attributes: {},
  ...extra,
});
const allRoute: GatewayRoute = {
  name: 'all',
  match: { hosts: ['*'] },
  selector: {},
  policy: 'least-active',
};
const snapshot = (
  version: number,
  nowMs: number,
  proxies: GatewayProxy[],
  routing: GatewayRoute[] = [allRoute],
): GatewaySnapshot => {
  const c: GatewaySnapshotContent = {
    schemaVersion: 1,
    version,
    ownershipEpoch: 1,
    workerId: 'w1',
    generatedAt: iso(nowMs),
    validUntil: iso(nowMs + 600_000),
    routing,
    proxies,
  };
  return buildSnapshot(c, sha256Hex);
};
const noSticky = { stickyValue: () => undefined, stickyOwner: () => '' };
/** The upstream a pick chose; fails the test when it chose none. */
const chosen = (r: PickResult) => {
  if (r.kind !== 'ok') throw new Error(`no upstream picked: ${r.kind}`);
  return r.upstream;
};
/** A series' value in /metrics text, or undefined when the series is absent. */
const seriesValue = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('the SUSPECT metrics', () => {
  it('show the suspect upstreams of the applied snapshot, and count the picks that fell back to one', async () => {
    const t = Date.now();
    const given = snapshot(1, t, [
      proxy('a', t),
      proxy('b', t, { suspect: true }),
      proxy('c', t, { suspect: true }),
    ]);
    const gw = await startStandaloneGateway(given, 'w1');
    const base = `http://127.0.0.1:${gw.httpPort}`;
    const metrics = async () => (await fetch(`${base}/metrics`)).text();
    try {
      expect(await (await fetch(`${base}/healthz`)).json()).toMatchObject({
        snapshot: { version: 1, proxies: 3, suspect: 2 },
      });
      const before = await metrics();
      expect(seriesValue(before, 'gateway_suspect_upstreams')).toBe(2);
      expect(seriesValue(before, 'gateway_suspect_fallbacks_total')).toBe(0);

      // The sound upstream is usable: it is picked, and nothing fell back.
      const first = chosen(gw.worker.pick('example.com', Date.now(), noSticky));
      expect(first.name).toBe('a');
      expect(seriesValue(await metrics(), 'gateway_suspect_fallbacks_total')).toBe(0);

      // It is at capacity now (one request dialling it): the next two requests fall back, one each.
      first.live.reserved++;
      for (const expected of [1, 2]) {
        const next = chosen(gw.worker.pick('example.com', Date.now(), noSticky));
        expect(next.suspect).toBe(true);
        next.live.reserved++;
        expect(seriesValue(await metrics(), 'gateway_suspect_fallbacks_total')).toBe(expected);
      }
      // None usable at all: no_upstream, which is no fallback.
      expect(gw.worker.pick('example.com', Date.now(), noSticky).kind).toBe('no_upstream');
      expect(seriesValue(await metrics(), 'gateway_suspect_fallbacks_total')).toBe(2);
    } finally {
      await gw.shutdown();
    }
  });

  it('do not count a sticky key that stays on a proxy turned SUSPECT while a sound one is usable', async () => {
    const t = Date.UTC(2026, 0, 1);
    const creds = new StaticCredentialResolver();
    const worker = new GatewayWorker({
      credentials: new CredentialCache(creds, 60_000, () => t),
      log: jsonLogger('error', () => {}),
      ...gatewayClocks(() => t),
      maxStaleAgeMs: 30_000,
      workerId: 'w1',
      stickyTableSize: 10,
      outcomeQueueSize: 10,
    });
    const sticky: GatewayRoute = {
      name: 'sticky',
      match: { hosts: ['*'] },
      selector: {},
      policy: 'sticky',
      stickyKey: { header: 'x-session' },
    };
    const session = { stickyValue: () => 's1', stickyOwner: () => 'u' };
    await worker.applySnapshot(snapshot(1, t, [proxy('a', t), proxy('b', t)], [sticky]));
    const pinned = chosen(worker.pick('example.com', t, session)).name;
    const other = pinned === 'a' ? 'b' : 'a';
    // The pinned proxy turns SUSPECT: the key stays on it, the sound one being usable.
    await worker.applySnapshot(
      snapshot(2, t, [proxy(pinned, t, { suspect: true }), proxy(other, t)], [sticky]),
    );
    expect(worker.snapshot()?.suspectUpstreams).toBe(1);
    expect(chosen(worker.pick('example.com', t, session)).name).toBe(pinned);
    expect(worker.suspectFallbacks).toBe(0);
    // The sound one at capacity: the same pick is now the only one there is, and counts.
    worker.snapshot()!.upstreams.get(other)!.live.reserved++;
    expect(chosen(worker.pick('example.com', t, session)).name).toBe(pinned);
    expect(worker.suspectFallbacks).toBe(1);
  });

  it('count a request once however often it picks: a redial passes on that it fell back (pick `counted`)', async () => {
    const t = Date.UTC(2026, 0, 1);
    const worker = new GatewayWorker({
      credentials: new CredentialCache(new StaticCredentialResolver(), 60_000, () => t),
      log: jsonLogger('error', () => {}),
      ...gatewayClocks(() => t),
      maxStaleAgeMs: 30_000,
      workerId: 'w1',
      stickyTableSize: 10,
      outcomeQueueSize: 10,
    });
    await worker.applySnapshot(
      snapshot(1, t, [proxy('a', t), proxy('b', t, { suspect: true }), proxy('c', t, { suspect: true })]),
    );
    const a = worker.snapshot()!.upstreams.get('a')!;
    // The sound proxy usable: no fallback.
    const first = worker.pick('example.com', t, noSticky);
    expect(first).toMatchObject({ kind: 'ok', fellBack: false });
    expect(chosen(first).name).toBe('a');
    // Its dial refused, the redial avoids it: the only sound proxy out of this request's reach, the
    // suspect one picked is a fallback, counted.
    const redial = worker.pick('example.com', t, noSticky, a, false);
    expect(redial).toMatchObject({ kind: 'ok', fellBack: true });
    expect(chosen(redial).suspect).toBe(true);
    expect(worker.suspectFallbacks).toBe(1);
    // A further pick of the same request (counted): still fellBack, not counted again.
    const third = worker.pick('example.com', t, noSticky, chosen(redial), true);
    expect(third).toMatchObject({ kind: 'ok', fellBack: true });
    expect(worker.suspectFallbacks).toBe(1);
    // Another request, its sound proxy at capacity: a fallback of its own.
    a.live.reserved = 1;
    expect(worker.pick('example.com', t, noSticky)).toMatchObject({ kind: 'ok', fellBack: true });
    expect(worker.suspectFallbacks).toBe(2);
  });
});
