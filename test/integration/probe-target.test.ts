// The TARGET tier against real forward proxies (Compute emulator instances, each egressing from its own
// 127.x address) and the Firestore emulator: a target site that refuses one proxy's address makes the
// route unreachable through that proxy alone; the proxy's own verdict is untouched; removing the route's
// check drops the track and publishes. The routing is the stored document the admin API writes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FieldPath } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import {
  FirestoreRoutingStore,
  ROUTING_DOC,
} from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { healthVerdictOf } from '../../shared/src/domain/health/proxy-health.js';
import type { RoutingRule } from '../../shared/src/messages/gateway-snapshot.js';
import { testProjectId } from '../support/emulators.js';
import { type ProbeFleet, startProbeFleet } from '../support/probe-fleet.js';

const listen = (server: Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );

describe('probe: the TARGET tier (contract §6, per route)', () => {
  let fleet: ProbeFleet;
  let site: Server;
  let siteUrl: string;
  /** Source addresses the target site answers 403 (a site blocking a proxy's exit IP). */
  const blocked = new Set<string>();
  const seen = new Set<string>();
  let routing: FirestoreRoutingStore;

  beforeAll(async () => {
    fleet = await startProbeFleet(testProjectId());
    routing = new FirestoreRoutingStore(fleet.db);
    site = createServer((req, res) => {
      const from = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
      seen.add(from);
      res.writeHead(blocked.has(from) ? 403 : 200, { 'content-type': 'text/plain' }).end('target');
    });
    siteUrl = `http://127.0.0.1:${await listen(site)}/robots.txt`;
  });
  afterAll(async () => {
    await fleet?.stop();
    await new Promise((r) => site?.close(r));
  });

  const shop = (targetCheck: RoutingRule['targetCheck']): RoutingRule => ({
    name: 'shop',
    match: { hosts: ['shop.example'] },
    selector: { pool: 'shop' },
    policy: 'round-robin',
    ...(targetCheck ? { targetCheck } : {}),
  });
  const putRouting = (routes: RoutingRule[]) =>
    routing.put({ routes, updatedAt: fleet.clock.now(), updatedBy: 'test' });
  const state = async (name: string) => (await fleet.health.get(name))!;
  const published = (name: string) => fleet.published.filter((p) => p.proxy === name);

  it('a site blocking one proxy: its route is unreachable through it alone; removing the check drops the track', async () => {
    const a = await fleet.add('t-blocked', { attributes: { pool: 'shop' }, gatewayPool: true });
    const b = await fleet.add('t-open', { attributes: { pool: 'shop' }, gatewayPool: true });
    await fleet.add('t-other', { attributes: { pool: 'news' }, gatewayPool: true });
    blocked.add(a.proxy.status.ip!);
    await putRouting([shop({ url: siteUrl, expectedStatus: 200 })]);

    // failureThreshold = successThreshold = 2 (probe-fleet): two ticks decide every track.
    await fleet.tick();
    await fleet.tick();
    const blockedState = await state('t-blocked');
    const openState = await state('t-open');
    // The requests really went through each proxy: the site saw both exit addresses.
    expect(seen).toEqual(new Set([a.proxy.status.ip, b.proxy.status.ip]));
    expect(blockedState.tracks['TARGET:shop']?.verdict).toBe('UNHEALTHY');
    expect(blockedState.verdict).toBe('AVAILABLE');
    expect(healthVerdictOf(blockedState)).toMatchObject({
      healthy: true,
      reason: 'ProbeSucceeded',
      unreachableRoutes: ['shop'],
    });
    expect(openState.tracks['TARGET:shop']?.verdict).toBe('AVAILABLE');
    expect(healthVerdictOf(openState)?.unreachableRoutes).toEqual([]);
    // Not selected by the route: never checked for it.
    expect(Object.keys((await state('t-other')).tracks).sort()).toEqual(['BASIC', 'EGRESS']);
    // Stored under its own map key, readable in the console as tracks.`TARGET:shop`.
    const raw = await fleet.db.collection(Collections.health).doc('t-blocked').get();
    expect(raw.get(new FieldPath('tracks', 'TARGET:shop'))).toMatchObject({ verdict: 'UNHEALTHY' });
    expect(
      fleet.log.lines.filter(
        (l) => l.event === 'probe.result' && l.tier === 'TARGET' && l.proxy === 't-blocked',
      ),
    ).toContainEqual(expect.objectContaining({ route: 'shop', ok: false, code: 'unexpected_status_403' }));
    // The state reached through the probe: the proxy's own Healthy condition is untouched by its route.
    const healthy = (await fleet.proxies.get('t-blocked'))!.proxy.status.conditions.find(
      (c) => c.type === 'Healthy',
    );
    expect(healthy).toMatchObject({ status: 'True', reason: 'ProbeSucceeded' });
    // Folded as reconcile folds it: the route the snapshots leave it out of, on the blocked proxy only.
    const statusOf = async (name: string) => (await fleet.proxies.get(name))!.proxy.status;
    expect((await statusOf('t-blocked')).unreachableRoutes).toEqual(['shop']);
    expect((await statusOf('t-open')).unreachableRoutes).toBeUndefined();

    // Steady: nothing changes, nothing written, nothing published.
    fleet.published.length = 0;
    expect((await fleet.tick())?.written).toBe(0);
    expect(fleet.published).toEqual([]);

    // A hand-edited routing document that no longer parses: logged, BASIC/EGRESS still run, tracks kept.
    await fleet.db.collection(Collections.gatewayConfig).doc(ROUTING_DOC).set({ routes: 'not a list' });
    const unreadable = await fleet.tick();
    expect(unreadable?.probed).toBe(3);
    expect(unreadable?.written).toBe(0);
    expect((await state('t-blocked')).tracks['TARGET:shop']?.verdict).toBe('UNHEALTHY');
    expect(fleet.log.lines.map((l) => l.message)).toContain(
      'routing could not be read; no TARGET checks this tick, TARGET tracks kept',
    );

    // The route's check removed: the next tick drops both tracks; the blocked proxy's change is published.
    await putRouting([shop(undefined)]);
    const run = await fleet.tick();
    expect(run?.written).toBe(2);
    expect((await state('t-blocked')).tracks['TARGET:shop']).toBeUndefined();
    expect((await state('t-open')).tracks['TARGET:shop']).toBeUndefined();
    expect(healthVerdictOf(await state('t-blocked'))?.unreachableRoutes).toEqual([]);
    expect(published('t-blocked')).toEqual([{ proxy: 't-blocked', reason: 'health-transition' }]);
    expect(published('t-open')).toEqual([]);
    expect((await statusOf('t-blocked')).unreachableRoutes).toBeUndefined();
  });
});
