// FirestoreRoutingStore against the Firestore emulator: it writes only routings every worker accepts, and a
// routing stored before the API refused repeated route names is read with the later duplicates dropped
// and named (the pass logs them and goes on) instead of failing every snapshot pass.
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import {
  FirestoreRoutingStore,
  ROUTING_DOC,
} from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { type GatewayRoute, GatewayRouting, wireRoute } from '../../shared/src/messages/gateway-snapshot.js';
import { WorkerStoreError } from '../../shared/src/ports/workers.js';
import { testProjectId } from '../support/emulators.js';

const db = new Firestore({ projectId: testProjectId() });
const store = new FirestoreRoutingStore(db);
afterAll(() => db.terminate());

const at = new Date(Date.UTC(2026, 10, 30, 12, 0, 0));
const route = (name: string, host: string): GatewayRoute => ({
  name,
  match: { hosts: [host] },
  selector: {},
  policy: 'least-active',
});
const doc = () => db.collection(Collections.gatewayConfig).doc(ROUTING_DOC);

describe('FirestoreRoutingStore', () => {
  it('stores and reads a valid routing, nothing dropped', async () => {
    const routes = [route('a', '*.example.com'), route('b', '*')];
    // The first write of the project's routing: revision 1 (none stored is 0).
    expect(await store.put({ routes, updatedAt: at, updatedBy: 'admin@example.com' })).toEqual({
      written: true,
      revision: 1,
    });
    expect(await store.get()).toEqual({
      routes,
      updatedAt: at,
      updatedBy: 'admin@example.com',
      droppedDuplicates: [],
      revision: 1,
    });
  });

  it('stores a route’s target check; the wire form of the route leaves it out', async () => {
    const checked = {
      ...route('shop', '*.shop.example'),
      targetCheck: { url: 'https://www.shop.example/robots.txt', expectedStatus: 200 },
    };
    await store.put({ routes: [checked, route('b', '*')], updatedAt: at, updatedBy: 'a' });
    const got = await store.get();
    expect(got?.routes).toEqual([checked, route('b', '*')]);
    expect(got?.routes.map(wireRoute)).toEqual([route('shop', '*.shop.example'), route('b', '*')]);
    expect(GatewayRouting.safeParse(got?.routes.map(wireRoute)).success).toBe(true);
    // Stored beside the routes, not in them: `routes` is exactly the wire form, which a snapshot function
    // or probe of a release before target checks (strict route schema) still reads after a rollback.
    const raw = (await doc().get()).data()!;
    expect(GatewayRouting.safeParse(raw.routes).success).toBe(true);
    expect(raw.targetChecks).toEqual({ shop: checked.targetCheck });
    // A routing PUT without checks clears them.
    await store.put({ routes: [route('shop', '*.shop.example')], updatedAt: at, updatedBy: 'a' });
    expect((await doc().get()).data()!.targetChecks).toEqual({});
    expect((await store.get())?.routes).toEqual([route('shop', '*.shop.example')]);
  });

  it('refuses to write two routes of the same name, and the stored routing stays', async () => {
    const before = await store.get();
    const err = await store
      .put({ routes: [route('a', 'x.com'), route('a', '*')], updatedAt: at, updatedBy: 'x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkerStoreError);
    expect(err).toHaveProperty('kind', 'invalid');
    expect(await store.get()).toEqual(before);
  });

  it('reads a routing stored with repeated names as the first route of each name, naming the dropped', async () => {
    await doc().set({
      routes: [route('a', 'x.com'), route('b', 'y.com'), route('a', '*')],
      updatedAt: Timestamp.fromDate(at),
      updatedBy: 'before-the-fix',
    });
    const got = await store.get();
    expect(got).toEqual({
      routes: [route('a', 'x.com'), route('b', 'y.com')],
      updatedAt: at,
      updatedBy: 'before-the-fix',
      droppedDuplicates: ['a'],
      // Stored before revisions were kept.
      revision: 1,
    });
    expect(GatewayRouting.safeParse(got?.routes).success).toBe(true);
  });

  // The revision is bookkeeping for If-Match, read from its raw field (a broken one counts as 1): it must
  // never make the routing itself unreadable, which fails GET, every probe tick's TARGET tier and, with no
  // routing published before, every snapshot pass.
  it('reads a routing whose stored revision is out of shape, as revision 1, and a PUT writes 2', async () => {
    for (const revision of ['3', 0, -2, 1.5, null]) {
      await doc().set({
        routes: [route('a', '*')],
        targetChecks: {},
        updatedAt: Timestamp.fromDate(at),
        updatedBy: 'console',
        revision,
      });
      expect(await store.get(), JSON.stringify(revision)).toMatchObject({
        routes: [route('a', '*')],
        revision: 1,
      });
    }
    expect(
      await store.put({ routes: [route('a', '*')], updatedAt: at, updatedBy: 'a' }, (r) => r === 1),
    ).toEqual({ written: true, revision: 2 });
  });

  it('still fails on a routing that is wrong in any other way (invalid: fix it by hand)', async () => {
    await doc().set({
      routes: [{ name: 'a', policy: 'nope' }],
      updatedAt: Timestamp.fromDate(at),
      updatedBy: 'x',
    });
    await expect(store.get()).rejects.toMatchObject({ kind: 'invalid' });
  });

  it('review: reads a routing the release before 296038c stored, with each check inside its route', async () => {
    // 74e93c6 wrote RoutingRules whole (targetCheck in the route). The strict wire-route schema now
    // refuses that key, so get() throws `invalid`, and snapshot passes keep the last routing they published
    // (none here: they fail, and workers go stale as their grants lapse) until an admin PUTs it again.
    const check = { url: 'https://www.shop.example/robots.txt', expectedStatus: 200 };
    await doc().set({
      routes: [{ ...route('shop', '*.shop.example'), targetCheck: check }, route('b', '*')],
      updatedAt: Timestamp.fromDate(at),
      updatedBy: 'release-74e93c6',
    });
    expect((await store.get())?.routes).toEqual([
      { ...route('shop', '*.shop.example'), targetCheck: check },
      route('b', '*'),
    ]);
  });
});
