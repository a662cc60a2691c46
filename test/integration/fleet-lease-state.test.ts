// The fleet page's feed over the real Firestore emulator: a leaseState document that does not decode (a
// hand edit) was dropped like an absent one, so the page, `fleet watch` and /fleet/api/state showed the
// proxy with 0 leases while the lease service counts it full and grants nothing on it.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { FirestoreFleetFeed } from '../../functions/api/src/fleet/firestore-feed.js';
import { buildFleetView } from '../../functions/api/src/fleet/view-model.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { proxy, writeFleet } from '../support/leases.js';

const projectId = testProjectId('demo-fleet-lease-state');
const db = new Firestore({ projectId });
const feed = new FirestoreFleetFeed(db, memoryLogger());

afterAll(async () => {
  await feed.stop();
  await db.terminate();
  await releaseProject(projectId);
});

describe('fleet feed: a lease state that does not decode', () => {
  it('shows the proxy full, with leaseStateInvalid; a readable one as it is', async () => {
    await writeFleet(db, [proxy('bad', { capacity: 3 }), proxy('good', { capacity: 3 })]);
    await db.collection(LEASE_COLLECTIONS.leaseState).doc('bad').set({ entries: 'garbage' });
    await db.collection(LEASE_COLLECTIONS.leaseState).doc('good').set({ entries: [] });
    await feed.ready();
    const rows = buildFleetView(feed.inputs(), new Date()).rows;
    expect(rows.find((r) => r.name === 'bad')).toMatchObject({ activeLeases: 3, leaseStateInvalid: true });
    const good = rows.find((r) => r.name === 'good');
    expect(good).toMatchObject({ activeLeases: 0 });
    expect(good).not.toHaveProperty('leaseStateInvalid');
  });
});
