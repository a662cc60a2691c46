// The fleet page's feed over the real Firestore emulator: a leaseState document that does not decode (a
// hand edit) was dropped like an absent one, so the page, `fleet watch` and /fleet/api/state showed the
// proxy with 0 leases while the lease service counts it full and grants nothing on it.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { FirestoreFleetFeed } from '../../functions/api/src/fleet/firestore-feed.js';
import { buildFleetView } from '../../functions/api/src/fleet/view-model.js';
import { cooldownDocId, LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { encodeCooldown } from '../../shared/src/adapters/firestore/lease-converter.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { proxy, writeFleet } from '../support/leases.js';
import { recordUnhandledRejections } from '../support/unhandled-rejections.js';

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

  it('names a document that does not decode once, and again only once it decoded or went in between', async () => {
    const log = memoryLogger();
    const own = new FirestoreFleetFeed(db, log);
    try {
      await own.ready();
      const named = () => log.lines.filter((l) => l.collection === 'proxies' && l.id === 'odd').length;
      const rows = () => buildFleetView(own.inputs(), new Date()).rows.map((r) => r.name);
      const until = async (what: string, ok: () => boolean) => {
        for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
        expect(ok(), what).toBe(true);
      };
      const odd = db.collection('proxies').doc('odd');
      // Each step ends with a marker proxy written after it: once the marker shows, the step was seen.
      const step = async (n: number, write: () => Promise<unknown>) => {
        await write();
        await writeFleet(db, [proxy(`marker-${n}`)]);
        await until(`marker-${n} in the feed`, () => rows().includes(`marker-${n}`));
      };
      await step(1, () => odd.set({ spec: 'garbage' }));
      expect(named()).toBe(1);
      await step(2, () => odd.set({ spec: 'still garbage' }));
      expect(named()).toBe(1);
      await step(3, () => writeFleet(db, [proxy('odd')]));
      expect(rows()).toContain('odd');
      await step(4, () => odd.set({ spec: 'broken again' }));
      expect(named()).toBe(2);
      await step(5, () => odd.delete());
      await step(6, () => odd.set({ spec: 'garbage once more' }));
      expect(named()).toBe(3);
    } finally {
      await own.stop();
    }
  });
});

// The cooldowns collection is mostly ended ones until Firestore's TTL deletes them (a day at crawler
// volumes): the feed read, and held, every one of them on each start, to show the running few.
describe('fleet feed: cooldowns', () => {
  it('reads only the cooldowns still running', async () => {
    const now = new Date();
    const cooldown = (target: string, untilMs: number) => ({
      proxy: 'cooled',
      proxyUid: null,
      target,
      until: new Date(now.getTime() + untilMs),
      reason: 'banned' as const,
      leaseId: `lease-${target}`,
      reportedAt: now,
    });
    const batch = db.batch();
    for (const [target, untilMs] of [
      ['ended-1.example', -3_600_000],
      ['ended-2.example', -60_000],
      ['running.example', 600_000],
    ] as const)
      batch.set(
        db.collection(LEASE_COLLECTIONS.cooldowns).doc(cooldownDocId('cooled', target)),
        encodeCooldown(cooldown(target, untilMs)),
      );
    await batch.commit();
    const own = new FirestoreFleetFeed(db, memoryLogger(), { now: () => now });
    try {
      await own.ready();
      expect(own.inputs().cooldowns.map((c) => c.target)).toEqual(['running.example']);
    } finally {
      await own.stop();
    }
  });
});

describe('fleet feed: stopped', () => {
  // The API's close stops the feed, then terminates the client (wiring.ts); a fleet request still running
  // then started the six listeners again on the terminated client: six unhandled rejections (the library
  // drops the promise), and the request held for the feed's 15 s load bound before its 503.
  it('refuses a later ready() at once, and listens on nothing', async () => {
    const rejections = recordUnhandledRejections();
    const own = new Firestore({ projectId });
    const stopped = new FirestoreFleetFeed(own, memoryLogger());
    try {
      await stopped.ready();
      await stopped.stop();
      await own.terminate();
      const started = performance.now();
      await expect(stopped.ready()).rejects.toThrow('fleet feed stopped');
      expect(performance.now() - started).toBeLessThan(1_000);
      stopped.subscribe(() => {})();
      await new Promise((r) => setTimeout(r, 300));
      expect(rejections.reasons).toEqual([]);
    } finally {
      rejections.stop();
      await stopped.stop();
      await own.terminate();
    }
  });
});

describe('fleet feed: idle', () => {
  // IDLE_MS after the console's last viewer left, the listeners stopped but the mirrors kept every decoded
  // document: the whole fleet on the heap for the instance's life, for a page nobody looked at.
  it('drops its view with its listeners, and loads it again on the next look', async () => {
    await writeFleet(db, [proxy('idle-a', { capacity: 2 })]);
    await db.collection(LEASE_COLLECTIONS.leaseState).doc('idle-a').set({ entries: [] });
    const IDLE = 200;
    const own = new FirestoreFleetFeed(db, memoryLogger(), systemClock, IDLE);
    const sizes = () => {
      const i = own.inputs();
      return [
        i.proxies.size,
        i.health.size,
        i.leaseState.size,
        i.cooldowns.length,
        i.ownership.size,
        i.jobRuns.length,
      ];
    };
    // A viewer held across each load, as the routes' streams hold one: with no viewer the idle timer (200 ms
    // here) could stop the listeners whose first snapshots the load is waiting for (a cold emulator).
    const look = async () => {
      const leave = own.subscribe(() => {});
      try {
        await own.ready();
      } finally {
        leave();
      }
    };
    try {
      await look();
      expect(own.inputs().proxies.has('idle-a')).toBe(true);
      expect(own.inputs().leaseState.has('idle-a')).toBe(true);
      await new Promise((r) => setTimeout(r, IDLE * 3));
      expect(sizes()).toEqual([0, 0, 0, 0, 0, 0]);
      await look();
      expect(own.inputs().proxies.has('idle-a')).toBe(true);
      expect(own.inputs().leaseState.has('idle-a')).toBe(true);
    } finally {
      await own.stop();
    }
  });
});
