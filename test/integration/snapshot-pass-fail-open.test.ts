// The snapshot pass against the Firestore emulator: the TARGET tier fails a route open when no proxy a
// worker's snapshot carries this pass reaches it. A reachable pool proxy that no snapshot holds —
// reclaimed for an exclusive lease here — is no way out for the route: counting it would have every worker
// exclude its own proxies, and the route would have no candidate on any gateway (no_upstream everywhere),
// the outage fail-open exists to prevent.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { SnapshotPassDeps } from '../../functions/snapshot/src/deps.js';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { FirestoreReclaimStore } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreRoutingStore } from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { missingContractFields } from '../../shared/src/testing/log-contract.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { countingHolders, firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
afterAll(() => db.terminate());
const T0 = new Date('2026-11-30T12:00:00Z');

const log = memoryLogger();
const deps = (clock: ManualClock): SnapshotPassDeps => ({
  ...firestorePassDeps(db, clock, []),
  log,
  lockMs: 60_000,
  newHolder: countingHolders(),
});

beforeEach(() => clearProject(projectId));

describe('route fail-open counts only proxies some gateway can pick', () => {
  it('the only proxy that reaches the route is reclaimed: the route fails open on the worker that carries it', async () => {
    const clock = new ManualClock(T0);
    const w = record('gw-1', new Date(T0.getTime() + 60_000));
    await new FirestoreWorkerStore(db).put({ ...w, session: { ...w.session, protocolVersion: 3 } }, null);
    const proxies = new FirestoreProxyStore(db);
    const blocked = poolProxy('fo-blocked', 1);
    await proxies.create({ ...blocked, status: { ...blocked.status, unreachableRoutes: ['shop'] } });
    await proxies.create(poolProxy('fo-reaches', 2)); // healthy, reaches shop: but reclaimed below
    await new FirestoreReclaimStore(db).put({
      proxy: 'fo-reaches',
      uid: null,
      requestedAt: T0,
      requestedBy: 'lease',
      until: new Date(T0.getTime() + 3_600_000),
    });
    await new FirestoreRoutingStore(db).put({
      routes: [
        {
          name: 'shop',
          match: { hosts: ['*'] },
          selector: {},
          policy: 'least-active',
          targetCheck: { url: 'https://shop.example/robots.txt', expectedStatus: 200 },
        },
      ],
      updatedAt: T0,
      updatedBy: 'admin',
    });

    const summary = await runSnapshotPass(deps(clock));
    expect(summary).toMatchObject({ published: 1, failures: 0 });
    const full = await new FirestoreSnapshotStore(db).loadFull('gw-1');
    // gw-1 carries only fo-blocked; no gateway carries fo-reaches. Excluding fo-blocked from "shop" leaves
    // the route with no candidate on any gateway: it must fail open.
    expect(full?.proxies.map((p) => p.name)).toEqual(['fo-blocked']);
    expect(full?.proxies[0]).not.toHaveProperty('excludedRoutes');
    // The line the routes_failed_open log metric (and its alert) counts: terraform/monitoring.tf.
    expect(log.lines).toContainEqual(
      expect.objectContaining({ severity: 'WARNING', event: 'gateway.route_failed_open', routes: ['shop'] }),
    );
    const failedOpen = log.lines.filter((l) => l.event === 'gateway.route_failed_open');
    expect(failedOpen.map(missingContractFields)).toEqual([[]]);
  });
});
