// FirestoreLeaseStore against the Firestore emulator: capacity, exclusivity, expiry by the clock, renewal,
// idempotent release and cooldowns — with two store instances standing in for two service replicas.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DocumentReference, FieldValue, Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cooldownDocId, LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { encodeCooldown } from '../../shared/src/adapters/firestore/lease-converter.js';
import { FORGET_IDLE_MS } from '../../shared/src/adapters/firestore/lease-state-cache.js';
import { FirestoreLeaseStore } from '../../shared/src/adapters/firestore/lease-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { loggedLeaseId } from '../../shared/src/adapters/log/logged-lease-id.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { GLOBAL_TARGET } from '../../shared/src/domain/leases/model.js';
import type { Candidate } from '../../shared/src/domain/leases/selection.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import {
  COOLDOWN_SITES_PER_LEASE,
  type KeyIntent,
  type NewLease,
} from '../../shared/src/ports/lease-store.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { heldUpFirestore } from '../support/held-up-firestore.js';
import { storeClocks } from '../support/lease-store-clocks.js';
import { peakUsage, storedLeases } from '../support/leases.js';
import { type FirestoreRead, recordingFirestore } from '../support/recording-firestore.js';
import { replayCommits } from '../support/replayed-commit-firestore.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const settings = { cooldownWindowMs: 60_000 };
const quiet = memoryLogger();
let clock: ManualClock;
let stores: FirestoreLeaseStore[] = [];
let seq = 0;

function store(): FirestoreLeaseStore {
  const s = new FirestoreLeaseStore(new Firestore({ projectId }), {
    ...storeClocks(clock),
    settings,
    log: quiet,
  }).start();
  stores.push(s);
  return s;
}
const newLease = (o: Partial<NewLease> = {}): NewLease => ({
  id: `lease-${++seq}-${Math.random().toString(36).slice(2)}`,
  target: null,
  exclusive: false,
  holder: 'test',
  ttlSeconds: 60,
  ...o,
});
const UID = '00000000-0000-4000-8000-000000000000';
const cand = (name: string, capacity = 2, uid = UID): Candidate => ({ name, uid, capacity });
/** The proxy instance cand() grants on, as usage() takes it. */
const inst = (name: string, uid = UID) => ({ name, uid });

beforeEach(async () => {
  await clearProject(projectId);
  clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
});
afterEach(async () => {
  await Promise.all(stores.map((s) => s.stop()));
  stores = [];
});
afterAll(async () => {
  await db.terminate();
});

describe('FirestoreLeaseStore', () => {
  it('the invariant checker itself sees overlaps (half-open intervals, exclusive weighs capacity)', () => {
    const l = (proxy: string, from: number, to: number, exclusive = false, released = true) => ({
      id: `${proxy}${from}`,
      proxy,
      proxyUid: null,
      target: null,
      endpoint: null,
      exclusive,
      holder: 't',
      ttlSeconds: 60,
      grantedAt: new Date(from),
      expiresAt: new Date(released ? 10_000 : to),
      releasedAt: released ? new Date(to) : null,
      renewals: 0,
    });
    const peaks = peakUsage(
      [
        l('a', 0, 10),
        l('a', 10, 20),
        l('b', 0, 10),
        l('b', 5, 15),
        l('c', 0, 10, true),
        l('c', 9, 12, false, false),
      ],
      () => 2,
    );
    expect(Object.fromEntries(peaks)).toEqual({ a: 1, b: 2, c: 3 });
  });

  it('a failed first read of the lease states is read again by a later request, not kept forever', async () => {
    const fs = new Firestore({ projectId });
    const collection = fs.collection.bind(fs);
    let failures = 1;
    // The first whole-collection read of lease states fails as Firestore does when it is unavailable.
    fs.collection = ((name: string) => {
      const c = collection(name);
      if (name === LEASE_COLLECTIONS.leaseState && failures > 0) {
        failures--;
        c.get = () => Promise.reject(Object.assign(new Error('14 UNAVAILABLE: no connection'), { code: 14 }));
      }
      return c;
    }) as typeof fs.collection;
    const s = new FirestoreLeaseStore(fs, { ...storeClocks(clock), settings, log: quiet }).start();
    stores.push(s);
    await expect(s.ready(5_000)).rejects.toMatchObject({ kind: 'not_ready' });
    // Within a second of the failure: refused at once, no new read.
    await expect(s.ready(5_000)).rejects.toMatchObject({ kind: 'not_ready' });
    clock.advance(1_001);
    await expect(s.ready(5_000)).resolves.toBeUndefined();
    expect(failures).toBe(0);
    expect((await s.grant({ candidates: [cand('p1', 1)], lease: newLease() })).kind).toBe('granted');
  });

  it('two requests that re-read the same stale state at once both learn it was read (one read, shared)', async () => {
    const s = store();
    await s.ready(10_000);
    clock.advance(5_000);
    const [a, b] = await Promise.all([s.refresh(['p1', 'p2']), s.refresh(['p1'])]);
    // The second waited on the first's read of p1: it must look again too (a release may be in it).
    expect([a, b]).toEqual([2, 1]);
    expect(await s.refresh(['p1'])).toBe(0);
  });

  it('a bounded refresh reads the states seen longest ago first; the next call reads the next ones', async () => {
    const s = store();
    await s.ready(10_000);
    for (const p of ['p4', 'p3', 'p2', 'p1']) {
      expect(await s.refresh([p])).toBe(1);
      clock.advance(10);
    }
    clock.advance(2_000);
    const all = ['p1', 'p2', 'p3', 'p4'];
    expect(await s.refresh(all, 2)).toBe(2);
    // p4 and p3, seen longest ago, were the ones read: p1 and p2 are still stale.
    expect(await s.refresh(['p3', 'p4'])).toBe(0);
    expect(await s.refresh(all, 2)).toBe(2);
    expect(await s.refresh(all, 2)).toBe(0);
  });

  it('grants up to capacity, then reports no room; release frees a slot and is idempotent', async () => {
    const s = store();
    await s.ready(10_000);
    const a = await s.grant({ candidates: [cand('p1')], lease: newLease() });
    const b = await s.grant({ candidates: [cand('p1')], lease: newLease() });
    const c = await s.grant({ candidates: [cand('p1')], lease: newLease() });
    expect([a.kind, b.kind, c]).toEqual([
      'granted',
      'granted',
      { kind: 'no_room', atCapacity: 1, inGateway: 0 },
    ]);
    expect(s.usage(inst('p1'), clock.now())).toEqual({ active: 2, exclusive: false });
    if (a.kind !== 'granted') throw new Error('unreachable');

    await s.release(a.lease.id);
    await s.release(a.lease.id);
    expect((await s.find(a.lease.id))?.releasedAt).toEqual(clock.now());
    expect(s.usage(inst('p1'), clock.now()).active).toBe(1);
    expect((await s.grant({ candidates: [cand('p1')], lease: newLease() })).kind).toBe('granted');
    await s.release('no-such-lease');
  });

  it('moves on to the next candidate when the first is full', async () => {
    const s = store();
    await s.ready(10_000);
    await s.grant({ candidates: [cand('p1', 1)], lease: newLease() });
    const g = await s.grant({ candidates: [cand('p1', 1), cand('p2', 1)], lease: newLease() });
    expect(g.kind === 'granted' && g.lease.proxy).toBe('p2');
  });

  describe('a candidate whose writes stay queued past the lock wait', () => {
    /**
     * A store whose commits to the lease states of `commits`, and reads of those of `reads`, wait until the
     * returned `open()`.
     */
    const heldUp = (held: { commits?: string[]; reads?: string[] }, lockWaitMs: number) => {
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const paths = (names: string[] = []) => names.map((p) => `${LEASE_COLLECTIONS.leaseState}/${p}`);
      const db = heldUpFirestore(
        new Firestore({ projectId }),
        { commits: paths(held.commits), reads: paths(held.reads) },
        gate,
      );
      const s = new FirestoreLeaseStore(db, {
        ...storeClocks(clock),
        settings,
        log: quiet,
        lockWaitMs,
      }).start();
      stores.push(s);
      return { s, open };
    };
    /** A grant on `proxy` alone, holding its lock while its call is held up; its outcome, never thrown. */
    const holding = (s: FirestoreLeaseStore, proxy: string) =>
      s.grant({ candidates: [cand(proxy)], lease: newLease() }).catch((err: unknown) => err);

    it('is passed over for the next; with no other left, 503 (it may have room), not 409', async () => {
      const { s, open } = heldUp({ commits: ['p1'] }, 200);
      await s.ready(10_000);
      const holder = holding(s, 'p1');
      try {
        const next = await s.grant({ candidates: [cand('p1'), cand('p2', 1)], lease: newLease() });
        expect(next.kind === 'granted' && next.lease.proxy).toBe('p2');
        // p2 is full now: p1, still busy, may have room — a retry's, not "no room".
        await expect(
          s.grant({ candidates: [cand('p1'), cand('p2', 1)], lease: newLease() }),
        ).rejects.toMatchObject({ kind: 'unavailable' });
      } finally {
        open();
      }
      expect(await holder).toMatchObject({ kind: 'granted', lease: { proxy: 'p1' } });
    });

    it("the wait is the whole request's: once it has run out, a later busy candidate is not waited for", async () => {
      const WAIT_MS = 1_500;
      // p2's read is held up, not its commit: two commits held would take both of the store's commit
      // slots (group-commit.ts maxInFlight), and p3's commit would wait behind them.
      const { s, open } = heldUp({ commits: ['p1'], reads: ['p2'] }, WAIT_MS);
      await s.ready(10_000);
      const holders = [holding(s, 'p1'), holding(s, 'p2')];
      // The turn each candidate was given to wait for, as the store asked its per-proxy lock for it.
      const waits: [string, number][] = [];
      const store = s as unknown as { writing: (proxy: string, fn: unknown, waitMs?: number) => unknown };
      const writing = store.writing.bind(s);
      store.writing = (proxy, fn, waitMs) => {
        waits.push([proxy, waitMs ?? WAIT_MS]);
        return writing(proxy, fn, waitMs);
      };
      try {
        const g = await s.grant({ candidates: [cand('p1'), cand('p2'), cand('p3')], lease: newLease() });
        expect(g.kind === 'granted' && g.lease.proxy).toBe('p3');
        expect(waits.map(([proxy]) => proxy)).toEqual(['p1', 'p2', 'p3']);
        // p1 took the whole wait (its lock's timer ran it out); p2 and p3 get what is left of it — nothing,
        // give or take a timer's rounding — not a wait of their own.
        expect(waits[0]?.[1]).toBeGreaterThan(WAIT_MS - 50);
        for (const [, ms] of waits.slice(1)) expect(ms).toBeLessThan(WAIT_MS / 10);
      } finally {
        open();
      }
      for (const h of await Promise.all(holders)) expect(h).toMatchObject({ kind: 'granted' });
    });
  });

  it('an exclusive lease takes the whole proxy and needs it empty', async () => {
    const s = store();
    await s.ready(10_000);
    const ex = await s.grant({ candidates: [cand('p1', 5)], lease: newLease({ exclusive: true }) });
    expect(ex.kind).toBe('granted');
    expect((await s.grant({ candidates: [cand('p1', 5)], lease: newLease() })).kind).toBe('no_room');
    if (ex.kind === 'granted') await s.release(ex.lease.id);
    expect((await s.grant({ candidates: [cand('p1', 5)], lease: newLease() })).kind).toBe('granted');
    expect((await s.grant({ candidates: [cand('p1', 5)], lease: newLease({ exclusive: true }) })).kind).toBe(
      'no_room',
    );
  });

  it('an expired lease stops counting at its expiry, with no sweep', async () => {
    const s = store();
    await s.ready(10_000);
    await s.grant({ candidates: [cand('p1', 1)], lease: newLease({ ttlSeconds: 30 }) });
    clock.advance(29_999);
    expect((await s.grant({ candidates: [cand('p1', 1)], lease: newLease() })).kind).toBe('no_room');
    clock.advance(1);
    expect((await s.grant({ candidates: [cand('p1', 1)], lease: newLease() })).kind).toBe('granted');
    const state = await db.collection(LEASE_COLLECTIONS.leaseState).doc('p1').get();
    expect(state.get('entries')).toHaveLength(1);
  });

  it('a renewal whose commit landed but whose answer was lost counts once', async () => {
    // The client resends a commit whose answer it lost; the resend fails its own precondition. Taken for a
    // race, the renewal was committed again on a fresh read: renewals +2 stored, +1 answered.
    const s = store();
    await s.ready(10_000);
    const g = await s.grant({ candidates: [cand('p1')], lease: newLease({ ttlSeconds: 60 }) });
    if (g.kind !== 'granted') throw new Error('not granted');
    const replaying = new Firestore({ projectId });
    const sent = replayCommits(replaying);
    const r = new FirestoreLeaseStore(replaying, { ...storeClocks(clock), settings, log: quiet }).start();
    stores.push(r);
    await r.ready(10_000);
    clock.advance(10_000);
    const before = sent.replayed;
    const renewed = await r.renew(g.lease.id, 120);
    expect(sent.replayed - before).toBeGreaterThan(0);
    expect(renewed.kind === 'renewed' && renewed.lease).toMatchObject({
      renewals: 1,
      expiresAt: new Date(clock.now().getTime() + 120_000),
    });
    expect(await s.find(g.lease.id)).toMatchObject({
      renewals: 1,
      expiresAt: new Date(clock.now().getTime() + 120_000),
    });

    // A renewal that extends nothing (a TTL shorter than what is left) leaves the expiry as it was: its own
    // landed write is told by the lease document (TTL and renewals), and counted once too.
    const expiry = (await s.find(g.lease.id))!.expiresAt;
    const short = await r.renew(g.lease.id, 10);
    expect(short.kind === 'renewed' && short.lease).toMatchObject({
      renewals: 2,
      ttlSeconds: 10,
      expiresAt: expiry,
    });
    expect(await s.find(g.lease.id)).toMatchObject({ renewals: 2, ttlSeconds: 10, expiresAt: expiry });
  });

  /**
   * A replica whose first commit writing lease `leaseId` lands, then fails UNAVAILABLE once `between` has
   * run (another replica's renewal or release landing before this one reads the lease again).
   */
  async function landedUnanswered(between: () => Promise<unknown>) {
    const fs = new Firestore({ projectId });
    const client = fs as unknown as { request: (method: string, ...rest: unknown[]) => Promise<unknown> };
    const send = client.request.bind(fs);
    const hook = { leaseId: '', lost: 0 };
    client.request = async (method, ...rest) => {
      const answer = await send(method, ...rest);
      if (
        method === 'commit' &&
        hook.lost === 0 &&
        JSON.stringify(rest[0]).includes(`/leases/${hook.leaseId}"`)
      ) {
        hook.lost++;
        await between();
        throw Object.assign(new Error('14 UNAVAILABLE: connection reset'), { code: 14 });
      }
      return answer;
    };
    const s = new FirestoreLeaseStore(fs, { ...storeClocks(clock), settings, log: quiet }).start();
    stores.push(s);
    await s.ready(10_000);
    return { s, hook };
  }

  it('a renewal that landed unanswered is not counted again, though another renewal landed since', async () => {
    // The lease kept only the last renewal's id: the other renewal's replaced it, and the first one,
    // reading the lease again, committed once more — 3 renewals for 2.
    const b = store();
    await b.ready(10_000);
    const g = await b.grant({ candidates: [cand('p1')], lease: newLease({ ttlSeconds: 60 }) });
    if (g.kind !== 'granted') throw new Error('not granted');
    let twin: Awaited<ReturnType<FirestoreLeaseStore['renew']>> | null = null;
    const { s: a, hook } = await landedUnanswered(async () => {
      twin = await b.renew(g.lease.id, 120);
    });
    hook.leaseId = g.lease.id;
    clock.advance(1_000);
    const answer = await a.renew(g.lease.id, 180);
    expect(hook.lost).toBe(1);
    expect(twin).toMatchObject({ kind: 'renewed', lease: { renewals: 2 } });
    expect(answer).toMatchObject({ kind: 'renewed', lease: { renewals: 2 } });
    expect(await b.find(g.lease.id)).toMatchObject({ renewals: 2 });
  });

  it('a renewal that landed unanswered, its lease released since, answers released', async () => {
    const b = store();
    await b.ready(10_000);
    const g = await b.grant({ candidates: [cand('p1')], lease: newLease({ ttlSeconds: 60 }) });
    if (g.kind !== 'granted') throw new Error('not granted');
    const { s: a, hook } = await landedUnanswered(() => b.release(g.lease.id));
    hook.leaseId = g.lease.id;
    clock.advance(1_000);
    const answer = await a.renew(g.lease.id, 180);
    expect(hook.lost).toBe(1);
    expect(answer).toMatchObject({ kind: 'released', lease: { renewals: 1 } });
    expect(answer.kind === 'released' && answer.lease.releasedAt).toEqual(clock.now());
  });

  /**
   * A replica that runs `before` ahead of the first commit writing lease `hook.leaseId`, and records what it
   * reads (every single-document read included).
   */
  async function beforeLeaseCommit(before: () => Promise<unknown>) {
    const fs = new Firestore({ projectId });
    const client = fs as unknown as { request: (method: string, ...rest: unknown[]) => Promise<unknown> };
    const send = client.request.bind(fs);
    const hook = { leaseId: '', commits: 0 };
    client.request = async (method, ...rest) => {
      if (method === 'commit' && JSON.stringify(rest[0]).includes(`/leases/${hook.leaseId}"`))
        if (hook.commits++ === 0) await before();
      return send(method, ...rest);
    };
    const reads: FirestoreRead[] = [];
    const s = new FirestoreLeaseStore(recordingFirestore(fs, reads, { documents: true }), {
      ...storeClocks(clock),
      settings,
      log: quiet,
    }).start();
    stores.push(s);
    await s.ready(10_000);
    return { s, hook, reads };
  }
  const stateReads = (reads: FirestoreRead[]) =>
    reads.filter((r) => r.collection === LEASE_COLLECTIONS.leaseState).length;

  it('a renewal that lost to a report writing its lease reads the lease again, not its proxy’s state', async () => {
    // Firestore does not say which precondition failed: every lost commit read the state again, and cost
    // one of the request's commits and a backoff.
    const { s, hook, reads } = await beforeLeaseCommit(() =>
      db
        .collection(LEASE_COLLECTIONS.leases)
        .doc(hook.leaseId)
        .update({ cooldownSites: FieldValue.arrayUnion('site.example') }),
    );
    const g = await s.grant({ candidates: [cand('p1')], lease: newLease({ ttlSeconds: 60 }) });
    if (g.kind !== 'granted') throw new Error('not granted');
    hook.leaseId = g.lease.id;
    reads.splice(0);
    clock.advance(1_000);
    expect(await s.renew(g.lease.id, 120)).toMatchObject({ kind: 'renewed', lease: { renewals: 1 } });
    expect(hook.commits).toBe(2);
    expect(stateReads(reads)).toBe(0);
    const stored = await db.collection(LEASE_COLLECTIONS.leases).doc(g.lease.id).get();
    expect(stored.get('cooldownSites')).toEqual(['site.example']);
    expect(stored.get('renewals')).toBe(1);
  });

  it('renewals at once on one replica: the one that lost to the other’s lease write does not read the state', async () => {
    // Both read the lease before their turn on the proxy's lock; the second's commit fails on the lease
    // document the first wrote — with the state this replica already holds from that same commit.
    const { s, hook, reads } = await beforeLeaseCommit(async () => {
      // Both renewals have read the lease before the first one commits.
      for (
        let n = 0;
        n < 100 && reads.filter((r) => r.collection === LEASE_COLLECTIONS.leases).length < 2;
        n++
      )
        await new Promise((r) => setTimeout(r, 10));
    });
    const g = await s.grant({ candidates: [cand('p1')], lease: newLease({ ttlSeconds: 60 }) });
    if (g.kind !== 'granted') throw new Error('not granted');
    hook.leaseId = g.lease.id;
    reads.splice(0);
    clock.advance(1_000);
    const answers = await Promise.all([s.renew(g.lease.id, 120), s.renew(g.lease.id, 180)]);
    expect(answers.map((a) => (a.kind === 'renewed' ? a.lease.renewals : null)).toSorted()).toEqual([1, 2]);
    expect(hook.commits).toBe(3);
    expect(stateReads(reads)).toBe(0);
  });

  it('a renewal whose guess was wrong reads the state on its next loss: reports after each loss cannot spend its budget', async () => {
    // A replica holding a stale state of p1 (another replica granted on it since) renews; after each lost
    // commit a report lists a new site on the lease. Taken for a loss to the lease alone every time, the
    // stale state was committed against again and again — 32 commits and a 503 for one renewal.
    const fs = new Firestore({ projectId });
    const client = fs as unknown as { request: (method: string, ...rest: unknown[]) => Promise<unknown> };
    const send = client.request.bind(fs);
    const hook = { leaseId: '', commits: 0, sites: 0 };
    client.request = async (method, ...rest) => {
      const onLease =
        method === 'commit' &&
        hook.leaseId !== '' &&
        JSON.stringify(rest[0]).includes(`/leases/${hook.leaseId}"`);
      if (onLease) hook.commits++;
      try {
        return await send(method, ...rest);
      } catch (err) {
        if (onLease && hook.sites < 40) {
          hook.sites++;
          await db
            .collection(LEASE_COLLECTIONS.leases)
            .doc(hook.leaseId)
            .update({ cooldownSites: FieldValue.arrayUnion(`s${hook.sites}.example`) });
        }
        throw err;
      }
    };
    const a = new FirestoreLeaseStore(fs, { ...storeClocks(clock), settings, log: quiet }).start();
    stores.push(a);
    const b = store();
    await Promise.all([a.ready(10_000), b.ready(10_000)]);
    const g = await a.grant({ candidates: [cand('p1', 3)], lease: newLease({ ttlSeconds: 60 }) });
    if (g.kind !== 'granted') throw new Error('not granted');
    expect(await b.grant({ candidates: [cand('p1', 3)], lease: newLease({ ttlSeconds: 60 }) })).toMatchObject(
      {
        kind: 'granted',
      },
    );
    hook.leaseId = g.lease.id;
    clock.advance(1_000);
    expect(await a.renew(g.lease.id, 120)).toMatchObject({ kind: 'renewed', lease: { renewals: 1 } });
    expect(hook.commits).toBeLessThanOrEqual(3);
  });

  it('renewals at once, on one replica and on two, are each counted; the TTL stored is the last one’s', async () => {
    // Each read the lease before its turn on the proxy's lock and wrote renewals and ttlSeconds from that
    // read: of renewals at once, the stored count was one.
    const [r1, r2] = [store(), store()];
    await Promise.all([r1.ready(10_000), r2.ready(10_000)]);
    const g = await r1.grant({ candidates: [cand('p1')], lease: newLease({ ttlSeconds: 60 }) });
    if (g.kind !== 'granted') throw new Error('not granted');
    clock.advance(1_000);
    const ttls = [120, 180, 240, 300, 360, 420];
    const answers = await Promise.all(ttls.map((ttl, i) => (i < 4 ? r1 : r2).renew(g.lease.id, ttl)));
    const counts = answers.map((a) => (a.kind === 'renewed' ? a.lease.renewals : null));
    expect(counts.toSorted()).toEqual([1, 2, 3, 4, 5, 6]);
    const last = answers[counts.indexOf(6)];
    const stored = await r1.find(g.lease.id);
    expect(stored).toMatchObject({
      renewals: 6,
      ttlSeconds: last?.kind === 'renewed' && last.lease.ttlSeconds,
    });
    // The expiry is the longest asked for: a renewal never shortens a lease.
    expect(stored?.expiresAt).toEqual(new Date(clock.now().getTime() + 420_000));
  });

  it('renews an active lease within its bound, and tells expired, released and unknown apart', async () => {
    const s = store();
    await s.ready(10_000);
    const g = await s.grant({ candidates: [cand('p1')], lease: newLease({ ttlSeconds: 60 }) });
    if (g.kind !== 'granted') throw new Error('not granted');
    clock.advance(50_000);
    const r = await s.renew(g.lease.id, 120);
    expect(r.kind === 'renewed' && r.lease.expiresAt).toEqual(new Date(clock.now().getTime() + 120_000));
    expect((await s.find(g.lease.id))?.renewals).toBe(1);
    clock.advance(100_000);
    expect(s.usage(inst('p1'), clock.now()).active).toBe(1);
    clock.advance(20_000);
    expect((await s.renew(g.lease.id)).kind).toBe('expired');
    expect((await s.renew('nope')).kind).toBe('unknown');

    const h = await s.grant({ candidates: [cand('p1')], lease: newLease() });
    if (h.kind !== 'granted') throw new Error('not granted');
    await s.release(h.lease.id);
    expect((await s.renew(h.lease.id)).kind).toBe('released');
  });

  it('two replicas granting concurrently never exceed capacity', { timeout: 60_000 }, async () => {
    const [r1, r2] = [store(), store()];
    await Promise.all([r1.ready(10_000), r2.ready(10_000)]);
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        (i % 2 ? r1 : r2).grant({ candidates: [cand('p1', 3), cand('p2', 2)], lease: newLease() }),
      ),
    );
    const granted = results.filter((r) => r.kind === 'granted');
    expect(granted).toHaveLength(5);
    const leases = await storedLeases(db);
    expect(leases).toHaveLength(5);
    expect(Object.fromEntries(peakUsage(leases, (p) => (p === 'p1' ? 3 : 2)))).toEqual({ p1: 3, p2: 2 });
  });

  it('an exclusive grant racing another grant on another replica: one of them, never both', {
    timeout: 60_000,
  }, async () => {
    // Two replicas whose views both say p1 is empty and fresh grant on it at once, so both commit from
    // the same version of its state and only the precondition can stop the second: an exclusive lease
    // against a shared one (each order) or another exclusive one gets exactly one grant; two shared
    // leases both fit (capacity 2), the control that the race does not simply refuse. Released between
    // rounds, so every round starts from an empty proxy (the first from no state document: create).
    const CAPACITY = 2;
    const ROUNDS = 20;
    const PAIRS = [
      ['exclusive', 'shared'],
      ['shared', 'exclusive'],
      ['exclusive', 'exclusive'],
      ['shared', 'shared'],
    ] as const;
    /** A replica on its own client, counting the batches it commits (its attempts to write p1's state). */
    const replica = () => {
      const fs = new Firestore({ projectId });
      const batch = fs.batch.bind(fs);
      let commits = 0;
      fs.batch = () => {
        const b = batch();
        const commit = b.commit.bind(b);
        b.commit = () => {
          commits++;
          return commit();
        };
        return b;
      };
      const s = new FirestoreLeaseStore(fs, { ...storeClocks(clock), settings, log: quiet }).start();
      stores.push(s);
      return { s, commits: () => commits };
    };
    const replicas = [replica(), replica()] as const;
    await Promise.all(replicas.map((r) => r.s.ready(10_000)));
    const wins = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      const pair = PAIRS[round % PAIRS.length]!;
      const what = `round ${round}: ${pair.join(' vs ')}`;
      // Both views re-read (the other replica's release is news to one of them) and empty.
      clock.advance(1_001);
      await Promise.all(replicas.map((r) => r.s.refresh(['p1'])));
      for (const r of replicas)
        expect(r.s.usage(inst('p1'), clock.now()), what).toEqual({ active: 0, exclusive: false });
      const before = replicas.map((r) => r.commits());
      const answers = await Promise.all(
        pair.map((kind, i) =>
          replicas[i]!.s.grant({
            candidates: [cand('p1', CAPACITY)],
            lease: newLease({ exclusive: kind === 'exclusive' }),
          }),
        ),
      );
      // Each replica went to Firestore: neither was refused on its own view alone.
      for (const [i, r] of replicas.entries()) expect(r.commits() - before[i]!, what).toBeGreaterThan(0);
      const granted = answers.flatMap((a, i) => (a.kind === 'granted' ? [{ lease: a.lease, by: i }] : []));
      const both = pair.every((kind) => kind === 'shared');
      expect(granted.length, what).toBe(both ? 2 : 1);
      for (const a of answers.filter((a) => a.kind !== 'granted'))
        expect(a, what).toEqual({ kind: 'no_room', atCapacity: 1, inGateway: 0 });
      // The stored state holds exactly the granted entries.
      const state = await db.collection(LEASE_COLLECTIONS.leaseState).doc('p1').get();
      const entries = (state.get('entries') as Array<{ leaseId: string; expiresAt: Timestamp }>).filter(
        (e) => e.expiresAt.toMillis() > clock.now().getTime(),
      );
      expect(entries.map((e) => e.leaseId).toSorted(), what).toEqual(
        granted.map((g) => g.lease.id).toSorted(),
      );
      if (!both) {
        const won = `${pair[granted[0]!.by]} won ${pair.join(' vs ')}`;
        wins.set(won, (wins.get(won) ?? 0) + 1);
      }
      clock.advance(10);
      for (const g of granted) await replicas[g.by]!.s.release(g.lease.id);
    }
    console.log('exclusive races won', Object.fromEntries(wins));

    // Every round's leases overlapped for 10 ms: an exclusive one beside any other would weigh over 2.
    const leases = await storedLeases(db);
    expect(leases).toHaveLength(ROUNDS + ROUNDS / PAIRS.length);
    expect(leases.filter((l) => l.exclusive).length).toBeGreaterThan(0);
    expect(leases.every((l) => l.releasedAt !== null)).toBe(true);
    expect(Object.fromEntries(peakUsage(leases, () => CAPACITY))).toEqual({ p1: CAPACITY });
  });

  it('replicas with stale views stay within capacity and find released room again', async () => {
    const [r1, r2] = [store(), store()];
    await Promise.all([r1.ready(10_000), r2.ready(10_000)]);
    const g1 = await r1.grant({ candidates: [cand('p1')], lease: newLease() });
    const g2 = await r1.grant({ candidates: [cand('p1')], lease: newLease() });
    if (g1.kind !== 'granted' || g2.kind !== 'granted') throw new Error('not granted');
    // r2 has not seen r1's grants: its view says empty, and its grant still cannot exceed capacity.
    expect(r2.usage(inst('p1'), clock.now()).active).toBe(0);
    expect(await r2.grant({ candidates: [cand('p1')], lease: newLease() })).toEqual({
      kind: 'no_room',
      atCapacity: 1,
      inGateway: 0,
    });
    expect(r2.usage(inst('p1'), clock.now()).active).toBe(2);

    // r2 releases a lease r1 granted; r1's own view still says full until it is old enough to doubt.
    clock.advance(10);
    const releasedAt = clock.now();
    await r2.release(g1.lease.id);
    expect(r1.usage(inst('p1'), clock.now()).active).toBe(2);
    expect(await r1.refresh(['p1'])).toBe(0);
    clock.advance(1001);
    expect(await r1.refresh(['p1'])).toBe(1);
    expect(r1.usage(inst('p1'), clock.now()).active).toBe(1);
    const released = await r1.find(g1.lease.id);
    expect(released).not.toBeNull();
    expect(released!.releasedAt).toBeInstanceOf(Date);
    expect(released!.releasedAt).toEqual(releasedAt);

    // And a grant on a stale "full" view looks again before giving up.
    await r2.release(g2.lease.id);
    clock.advance(1001);
    expect((await r1.grant({ candidates: [cand('p1')], lease: newLease() })).kind).toBe('granted');
    expect(Math.max(...peakUsage(await storedLeases(db), () => 2).values())).toBe(2);
  });

  describe('a commit lost to another replica: the candidate is ranked again on what the re-read found', () => {
    // Candidates as selection ranks them (fewest active + pending, then latency, then name), capacity 10.
    const fast = (name: string, latencyMillis: number): Candidate => ({ ...cand(name, 10), latencyMillis });
    const ranked = [fast('p1', 10), fast('p2', 20)];

    /** Replicas whose views hold these proxies' states, empty (each granted and released on each). */
    async function replicas(n: number, names: readonly string[]): Promise<FirestoreLeaseStore[]> {
      const rs = Array.from({ length: n }, () => store());
      await Promise.all(rs.map((r) => r.ready(10_000)));
      for (const r of rs)
        for (const name of names) {
          const g = await r.grant({ candidates: [cand(name, 10)], lease: newLease() });
          if (g.kind !== 'granted') throw new Error(`not granted on ${name}`);
          await r.release(g.lease.id);
        }
      return rs;
    }
    /** Two replicas so prepared. */
    const two = async () => (await replicas(2, ['p1', 'p2'])) as [FirestoreLeaseStore, FirestoreLeaseStore];
    /** Leases not released, per proxy. */
    const held = async () => {
      const counts: Record<string, number> = {};
      for (const l of await storedLeases(db)) if (!l.releasedAt) counts[l.proxy] = (counts[l.proxy] ?? 0) + 1;
      return counts;
    };

    it('found 9/10 while the next has none: the lease goes to the next, not the 10th slot', async () => {
      const [a, b] = await two();
      for (let n = 0; n < 9; n++)
        expect((await b.grant({ candidates: [fast('p1', 10)], lease: newLease() })).kind).toBe('granted');
      // a's view: p1 and p2 empty. Its commit on p1 loses; p1 (9) now ranks behind p2 (0).
      expect(a.usage(inst('p1'), clock.now()).active).toBe(0);
      expect(await a.grant({ candidates: ranked, lease: newLease() })).toMatchObject({
        kind: 'granted',
        lease: { proxy: 'p2' },
      });
      expect(await held()).toEqual({ p1: 9, p2: 1 });
    });

    it('the candidate passed over is still tried when the next has no room after all', async () => {
      const [a, b] = await two();
      for (let n = 0; n < 9; n++)
        expect((await b.grant({ candidates: [fast('p1', 10)], lease: newLease() })).kind).toBe('granted');
      for (let n = 0; n < 10; n++)
        expect((await b.grant({ candidates: [fast('p2', 20)], lease: newLease() })).kind).toBe('granted');
      // p1 is passed over for p2, which a finds full: p1's last slot is the grant, never a 409.
      expect(await a.grant({ candidates: ranked, lease: newLease() })).toMatchObject({
        kind: 'granted',
        lease: { proxy: 'p1' },
      });
      expect(await a.grant({ candidates: ranked, lease: newLease() })).toEqual({
        kind: 'no_room',
        atCapacity: 2,
        inGateway: 0,
      });
    });

    it('a commit that failed transiently (it may still land) is retried on its proxy, never passed over', async () => {
      const [, b] = await two();
      // A replica whose first commit fails UNAVAILABLE without landing: the client's own error, which a
      // commit stalled past the read after it would give as well — and that one could land later.
      const db = new Firestore({ projectId });
      const client = db as unknown as { request: (method: string, ...rest: unknown[]) => Promise<unknown> };
      const send = client.request.bind(db);
      let failed = 0;
      client.request = async (method, ...rest) => {
        if (method === 'commit' && failed === 0 && a.usage(inst('p1'), clock.now()).active === 0) {
          failed++;
          throw Object.assign(new Error('unavailable'), { code: 14 });
        }
        return send(method, ...rest);
      };
      const a = new FirestoreLeaseStore(db, { ...storeClocks(clock), settings, log: quiet }).start();
      stores.push(a);
      await a.ready(10_000);
      await a.refresh(['p1', 'p2']);
      for (let n = 0; n < 9; n++)
        expect((await b.grant({ candidates: [fast('p1', 10)], lease: newLease() })).kind).toBe('granted');
      // a's view: p1 empty (read before b's grants). Its commit on p1 fails transiently; the re-read finds
      // 9/10, behind p2 — but a commit that may yet land is not left behind: p1 is retried, and granted.
      const g = await a.grant({ candidates: ranked, lease: newLease() });
      expect(failed).toBe(1);
      expect(g).toMatchObject({ kind: 'granted', lease: { proxy: 'p1' } });
      expect(await held()).toEqual({ p1: 10 });
    });

    it("a transient loss on the budget's last commit before the one kept for a candidate passed over is settled on its own proxy", async () => {
      const [, b] = await two();
      // A replica with 2 commits a request whose commit on p2 fails UNAVAILABLE unsent, and lands only just
      // before its next commit goes out — after the re-read that followed it: a commit stalled in flight.
      const db = new Firestore({ projectId });
      const client = db as unknown as { request: (method: string, ...rest: unknown[]) => Promise<unknown> };
      const send = client.request.bind(db);
      let stalled: (() => Promise<unknown>) | null = null;
      let failed = 0;
      client.request = async (method, ...rest) => {
        if (method !== 'commit') return send(method, ...rest);
        if (stalled) {
          const land = stalled;
          stalled = null;
          await land();
        } else if (failed === 0 && JSON.stringify(rest[0]).includes('/leaseState/p2"')) {
          failed++;
          stalled = () => send(method, ...rest);
          throw Object.assign(new Error('unavailable'), { code: 14 });
        }
        return send(method, ...rest);
      };
      const a = new FirestoreLeaseStore(db, {
        ...storeClocks(clock),
        settings,
        log: quiet,
        maxCommits: 2,
      }).start();
      stores.push(a);
      await a.ready(10_000);
      await a.refresh(['p1', 'p2']);
      for (let n = 0; n < 9; n++)
        expect((await b.grant({ candidates: [fast('p1', 10)], lease: newLease() })).kind).toBe('granted');
      // p1's commit loses (9/10: passed over for p2, a commit kept for it); p2's fails transiently with the
      // budget's last but that one spent. Moving on to p1 then, the stalled commit landed first: p1's failed
      // on the lease document p2's had created, and the request answered 503 with p2 leased to nobody.
      const g = await a.grant({ candidates: ranked, lease: newLease() });
      expect(failed).toBe(1);
      expect(g).toMatchObject({ kind: 'granted', lease: { proxy: 'p2' } });
      expect(await held()).toEqual({ p1: 9, p2: 1 });
    });

    it('concurrent acquires on replicas that all rank p1 first spread over the proxies', async () => {
      const names = ['p1', 'p2', 'p3', 'p4'];
      const rs = await replicas(4, names);
      const all = names.map((name, i) => fast(name, 10 * (i + 1)));
      const grants = await Promise.all(rs.map((r) => r.grant({ candidates: all, lease: newLease() })));
      expect(grants.map((g) => g.kind)).toEqual(['granted', 'granted', 'granted', 'granted']);
      // Before: every loser re-read p1, found room and committed there again — p1: 4, the others 0.
      expect(await held()).toEqual({ p1: 1, p2: 1, p3: 1, p4: 1 });
    });
  });

  it('a replica whose view of many proxies is stale passes over those found full, to one with room', async () => {
    // r1 knows p01–p20 as empty (it granted and released on each); r2 then fills p01–p17. Each of r1's
    // stale views costs a lost commit and a re-read — a capacity race lost, not contention: the request's
    // commit budget (16) is for repeated losses on one proxy, and must not run out before p18.
    const [r1, r2] = [store(), store()];
    await Promise.all([r1.ready(10_000), r2.ready(10_000)]);
    const names = Array.from({ length: 20 }, (_, i) => `p${String(i + 1).padStart(2, '0')}`);
    for (const name of names) {
      const g = await r1.grant({ candidates: [cand(name, 1)], lease: newLease() });
      if (g.kind !== 'granted') throw new Error(`not granted on ${name}`);
      await r1.release(g.lease.id);
    }
    for (const name of names.slice(0, 17)) {
      expect((await r2.grant({ candidates: [cand(name, 1)], lease: newLease() })).kind).toBe('granted');
    }
    const all = names.map((n) => cand(n, 1));
    const granted = await r1.grant({ candidates: all, lease: newLease() });
    expect(granted).toMatchObject({ kind: 'granted', lease: { proxy: 'p18' } });
    // Every proxy full now (r2 takes the last two; r1 still believes them free): no room, not 503.
    for (const name of ['p19', 'p20']) {
      expect((await r2.grant({ candidates: [cand(name, 1)], lease: newLease() })).kind).toBe('granted');
    }
    expect(await r1.grant({ candidates: all, lease: newLease() })).toEqual({
      kind: 'no_room',
      atCapacity: 20,
      inGateway: 0,
    });
    expect(Math.max(...peakUsage(await storedLeases(db), () => 1).values())).toBe(1);
  });

  it('gives back at most a budget of commits lost to stale views: a request stays bounded', async () => {
    // maxCommits 2: two stale losses given back, then they count — the request ends contended after
    // four candidates whatever the pool's size, instead of committing on every proxy it once saw free.
    const bounded = () => {
      const s = new FirestoreLeaseStore(new Firestore({ projectId }), {
        ...storeClocks(clock),
        settings,
        log: quiet,
        maxCommits: 2,
      }).start();
      stores.push(s);
      return s;
    };
    const [r1, r2] = [bounded(), store()];
    await Promise.all([r1.ready(10_000), r2.ready(10_000)]);
    const names = Array.from({ length: 7 }, (_, i) => `b${i + 1}`);
    for (const name of names) {
      const g = await r1.grant({ candidates: [cand(name, 1)], lease: newLease() });
      if (g.kind !== 'granted') throw new Error(`not granted on ${name}`);
      await r1.release(g.lease.id);
    }
    for (const name of names.slice(0, 6)) {
      expect((await r2.grant({ candidates: [cand(name, 1)], lease: newLease() })).kind).toBe('granted');
    }
    await expect(
      r1.grant({ candidates: names.map((n) => cand(n, 1)), lease: newLease() }),
    ).rejects.toMatchObject({ kind: 'contended' });
    // It read b1–b4 again on its losses; b5 and b6 are still stale: a request of its own gives both back.
    expect(
      await r1.grant({ candidates: names.slice(4).map((n) => cand(n, 1)), lease: newLease() }),
    ).toMatchObject({ kind: 'granted', lease: { proxy: 'b7' } });
  });

  it('a replica that no longer holds the states of proxies others filled reads at most 16 of them a request', async () => {
    // B loaded p01–p40 empty, then forgot them (idle past FORGET_IDLE_MS with nothing leased); A then fills
    // them. An unknown state ranks as empty, and finding one full costs no commit, so no commit budget
    // bounds it: each grant read all 40, one round trip each. Now 16 a request (one, then the rest in one
    // call), the candidates past them passed over — to one B knows has room, else 503 contended — and
    // the retries read the next ones, down to a no-room answer that counts all 40.
    const reads: FirestoreRead[] = [];
    const a = store();
    await a.ready(10_000);
    const names = Array.from({ length: 40 }, (_, i) => `p${String(i + 1).padStart(2, '0')}`);
    for (const name of names) {
      const g = await a.grant({ candidates: [cand(name, 1)], lease: newLease() });
      if (g.kind !== 'granted') throw new Error(`not granted on ${name}`);
      await a.release(g.lease.id);
    }
    const b = new FirestoreLeaseStore(
      recordingFirestore(new Firestore({ projectId }), reads, { documents: true }),
      { ...storeClocks(clock), settings, log: quiet },
    ).start();
    stores.push(b);
    await b.ready(10_000);
    clock.advance(FORGET_IDLE_MS + 60_000);
    // Any state B learns runs its forget sweep: this one ('spare', no document) stays known, with room.
    expect(await b.refresh(['spare'])).toBe(1);
    for (const name of names) {
      expect((await a.grant({ candidates: [cand(name, 1)], lease: newLease() })).kind).toBe('granted');
    }
    /** Documents read since the last call, and in how many calls. */
    const taken = () => {
      const r = reads.splice(0).filter((x) => x.collection === LEASE_COLLECTIONS.leaseState);
      return { docs: r.reduce((n, x) => n + x.docs, 0), calls: r.length };
    };
    taken();

    const all = names.map((n) => cand(n, 1));
    expect(await b.grant({ candidates: [...all, cand('spare', 1)], lease: newLease() })).toMatchObject({
      kind: 'granted',
      lease: { proxy: 'spare' },
    });
    expect(taken()).toEqual({ docs: 16, calls: 2 });
    await expect(b.grant({ candidates: all, lease: newLease() })).rejects.toMatchObject({
      kind: 'contended',
    });
    expect(taken()).toEqual({ docs: 16, calls: 2 });
    expect(await b.grant({ candidates: all, lease: newLease() })).toEqual({
      kind: 'no_room',
      atCapacity: 40,
      inGateway: 0,
    });
    expect(taken()).toEqual({ docs: 8, calls: 2 });
    expect(Math.max(...peakUsage(await storedLeases(db), () => 1).values())).toBe(1);
  });

  it('counts active leases from the stored leases', async () => {
    const s = store();
    await s.ready(10_000);
    const a = await s.grant({ candidates: [cand('p1', 5)], lease: newLease({ ttlSeconds: 30 }) });
    await s.grant({ candidates: [cand('p1', 5)], lease: newLease({ ttlSeconds: 60 }) });
    await s.grant({ candidates: [cand('p2', 5)], lease: newLease({ ttlSeconds: 60 }) });
    expect(await s.countActive()).toBe(3);
    if (a.kind === 'granted') await s.release(a.lease.id);
    expect(await s.countActive()).toBe(2);
    clock.advance(60_000);
    expect(await s.countActive()).toBe(0);
  });

  it('a malformed lease state fails closed: the proxy counts as full', async () => {
    await db.collection(LEASE_COLLECTIONS.leaseState).doc('p1').set({ entries: 'garbage' });
    const s = store();
    await s.ready(10_000);
    expect((await s.grant({ candidates: [cand('p1', 10)], lease: newLease() })).kind).toBe('no_room');
  });

  it('a lease on a state edited into garbage still releases (and stops counting); a renewal is refused 503', async () => {
    const s = store();
    await s.ready(10_000);
    const g = await s.grant({ candidates: [cand('p1', 10)], lease: newLease({ ttlSeconds: 60 }) });
    const h = await s.grant({ candidates: [cand('p1', 10)], lease: newLease({ ttlSeconds: 60 }) });
    if (g.kind !== 'granted' || h.kind !== 'granted') throw new Error('not granted');
    await db.collection(LEASE_COLLECTIONS.leaseState).doc('p1').set({ entries: 'garbage' });
    clock.advance(1_001); // the view is doubted and read again
    await expect(s.renew(h.lease.id)).rejects.toMatchObject({ kind: 'unavailable' });
    expect(await s.release(g.lease.id)).toBe(true);
    expect((await s.find(g.lease.id))!.releasedAt).toEqual(clock.now());
    expect(await s.countActive()).toBe(1);
  });

  // A lease id is the lease (any crawler token renews, reports or releases with it): its log lines carry
  // the digest the request log uses, never the id.
  it('a lease document edited into garbage is logged by the digest of its id, never the id', async () => {
    const log = memoryLogger();
    const s = new FirestoreLeaseStore(new Firestore({ projectId }), {
      ...storeClocks(clock),
      settings,
      log,
    }).start();
    stores.push(s);
    await s.ready(10_000);
    const g = await s.grant({ candidates: [cand('p1', 10)], lease: newLease() });
    if (g.kind !== 'granted') throw new Error('not granted');
    await db.collection(LEASE_COLLECTIONS.leases).doc(g.lease.id).set({ proxy: 'p1', expiresAt: 'garbage' });
    expect(await s.find(g.lease.id)).toBeNull();
    const line = log.lines.find((l) => l.message === 'malformed lease document');
    expect(line).toMatchObject({ severity: 'ERROR', lease: loggedLeaseId(g.lease.id) });
    expect(JSON.stringify(log.lines)).not.toContain(g.lease.id);
  });

  /** A cooldown of the lease `leaseId` on p1 for `target`, for a minute from now. */
  const cooldownOn = (leaseId: string, target: string) => ({
    proxy: 'p1',
    proxyUid: UID,
    target,
    until: new Date(clock.now().getTime() + 60_000),
    reason: 'rate_limited' as const,
    leaseId,
    reportedAt: clock.now(),
  });

  /** A report's cooldown for `target` on lease `leaseId`: the lease read, then the cooldown started. */
  const startOn = async (s: FirestoreLeaseStore, leaseId: string, target: string) => {
    const read = await s.findForReport(leaseId);
    if (!read) throw new Error(`no lease ${leaseId}`);
    return s.startCooldown(cooldownOn(leaseId, target), read);
  };

  it('cooldowns are shared by replicas and survive a restart', async () => {
    const r1 = store();
    await r1.ready(10_000);
    const g = await r1.grant({ candidates: [cand('p1')], lease: newLease() });
    if (g.kind !== 'granted') throw new Error('not granted');
    expect(await startOn(r1, g.lease.id, 'site.example')).toBe('started');
    expect(await r1.findForReport('no-such-lease')).toBeNull();
    // A lease deleted after the report read it: its site is not written.
    const h = await r1.grant({ candidates: [cand('p1')], lease: newLease() });
    if (h.kind !== 'granted') throw new Error('not granted');
    const read = await r1.findForReport(h.lease.id);
    await db.collection(LEASE_COLLECTIONS.leases).doc(h.lease.id).delete();
    expect(await r1.startCooldown(cooldownOn(h.lease.id, 'gone.example'), read!)).toBe('unknown_lease');
    expect(r1.coolingDown(inst('p1'), 'gone.example', clock.now())).toBe(false);
    expect(r1.coolingDown(inst('p1'), 'site.example', clock.now())).toBe(true);
    expect(r1.coolingDown(inst('p1'), 'other.example', clock.now())).toBe(false);
    await r1.stop();
    const r2 = store();
    await r2.ready(10_000);
    expect(r2.coolingDown(inst('p1'), 'site.example', clock.now())).toBe(true);
    clock.advance(60_000);
    expect(r2.coolingDown(inst('p1'), 'site.example', clock.now())).toBe(false);
  });

  it('one lease starts cooldowns for at most COOLDOWN_SITES_PER_LEASE sites, reported at once on two replicas', async () => {
    // Each report of a new target wrote a cooldown document of its own — one lease, any number of them,
    // each read by every replica's listener.
    const [r1, r2] = [store(), store()];
    await Promise.all([r1.ready(10_000), r2.ready(10_000)]);
    const g = await r1.grant({ candidates: [cand('p1')], lease: newLease() });
    if (g.kind !== 'granted') throw new Error('not granted');
    const sites = Array.from({ length: COOLDOWN_SITES_PER_LEASE + 8 }, (_, i) => `site-${i}.example`);
    const answers = await Promise.all(sites.map((site, i) => startOn(i % 2 ? r1 : r2, g.lease.id, site)));
    const stored = await db.collection(LEASE_COLLECTIONS.cooldowns).where('leaseId', '==', g.lease.id).get();
    expect(stored.size).toBe(COOLDOWN_SITES_PER_LEASE);
    expect(answers.filter((a) => a === 'started')).toHaveLength(COOLDOWN_SITES_PER_LEASE);
    expect(answers.filter((a) => a === 'capped')).toHaveLength(8);
    const started = sites.filter((_, i) => answers[i] === 'started');
    expect(stored.docs.map((d) => d.get('target')).toSorted()).toEqual(started.toSorted());
    // A site it cools down already is cooled down again (its end moved on); a new one still is not.
    clock.advance(10_000);
    expect(await startOn(r2, g.lease.id, started[0]!)).toBe('started');
    const capped = sites.find((_, i) => answers[i] === 'capped')!;
    expect(await startOn(r1, g.lease.id, capped)).toBe('capped');
    expect(r1.coolingDown(inst('p1'), capped, clock.now())).toBe(false);
    expect(
      (await db.collection(LEASE_COLLECTIONS.cooldowns).doc(cooldownDocId('p1', started[0]!)).get()).get(
        'until',
      ),
    ).toEqual(Timestamp.fromMillis(clock.now().getTime() + 60_000));
    // Another lease on the same proxy has sites of its own.
    const h = await r2.grant({ candidates: [cand('p1')], lease: newLease() });
    if (h.kind !== 'granted') throw new Error('not granted');
    expect(await startOn(r2, h.lease.id, capped)).toBe('started');
  });

  it('a lease written since its report read it is read again: a renewal is kept, the cap still holds', async () => {
    const s = store();
    await s.ready(10_000);
    const g = await s.grant({ candidates: [cand('p1')], lease: newLease() });
    if (g.kind !== 'granted') throw new Error('not granted');
    for (let i = 0; i < COOLDOWN_SITES_PER_LEASE - 2; i++)
      expect(await startOn(s, g.lease.id, `site-${i}.example`)).toBe('started');
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => s.findForReport(g.lease.id)));
    clock.advance(1_000);
    expect(await s.renew(g.lease.id, 120)).toMatchObject({ kind: 'renewed' });
    expect(await s.startCooldown(cooldownOn(g.lease.id, 'a.example'), a!)).toBe('started');
    expect(await s.startCooldown(cooldownOn(g.lease.id, 'b.example'), b!)).toBe('started');
    expect(await s.startCooldown(cooldownOn(g.lease.id, 'c.example'), c!)).toBe('capped');
    const stored = await db.collection(LEASE_COLLECTIONS.leases).doc(g.lease.id).get();
    expect(stored.get('cooldownSites')).toHaveLength(COOLDOWN_SITES_PER_LEASE);
    expect(stored.get('renewals')).toBe(1);
  });

  it('past COOLDOWN_SITES_PER_LEASE sites, a lease still cools its proxy down proxy-wide and for its own site', async () => {
    // The cap counted them as sites like any other: a lease acquired without a target that had reported 32
    // sites rate-limited, then `banned` without a target, started no cooldown — the banned proxy went on
    // being handed out; a lease acquired for a site could no longer cool its proxy down for it.
    const s = store();
    await s.ready(10_000);
    const sites = Array.from({ length: COOLDOWN_SITES_PER_LEASE }, (_, i) => `site-${i}.example`);
    const fill = async (leaseId: string) => {
      for (const site of sites) expect(await startOn(s, leaseId, site)).toBe('started');
      expect(await startOn(s, leaseId, 'one-more.example')).toBe('capped');
    };
    const g = await s.grant({ candidates: [cand('p1')], lease: newLease() });
    if (g.kind !== 'granted') throw new Error('not granted');
    await fill(g.lease.id);
    expect(await startOn(s, g.lease.id, GLOBAL_TARGET)).toBe('started');
    expect(s.coolingDown(inst('p1'), 'x.example', clock.now())).toBe(true);
    expect(s.coolingDown(inst('p1'), null, clock.now())).toBe(true);
    clock.advance(60_000);
    const h = await s.grant({ candidates: [cand('p1')], lease: newLease({ target: 'shop.example:8443' }) });
    if (h.kind !== 'granted') throw new Error('not granted');
    await fill(h.lease.id);
    expect(await startOn(s, h.lease.id, 'shop.example')).toBe('started');
    expect(s.coolingDown(inst('p1'), 'shop.example', clock.now())).toBe(true);
    expect(await startOn(s, h.lease.id, GLOBAL_TARGET)).toBe('started');
    // Neither took room, nor is listed: still capped for any other site.
    expect(await startOn(s, h.lease.id, 'one-more.example')).toBe('capped');
    const listed = (await db.collection(LEASE_COLLECTIONS.leases).doc(h.lease.id).get()).get('cooldownSites');
    expect(listed.toSorted()).toEqual(sites.toSorted());
  });

  it('a replica loads only the cooldowns still running, not every one the TTL has yet to delete', async () => {
    // TTL deletion lags expiry by up to a day: at crawler volumes the collection holds a day of expired
    // (proxy, target) cooldowns, and every replica start (and listener re-subscription) read them all
    // into memory, which only a TTL delete ever emptied again.
    const batch = db.batch();
    for (let i = 0; i < 40; i++) {
      batch.set(db.collection(LEASE_COLLECTIONS.cooldowns).doc(`old-${i}`), {
        ...encodeCooldown({
          proxy: `p${i}`,
          proxyUid: UID,
          target: 'site.example',
          until: new Date(clock.now().getTime() - 1_000 - i),
          reason: 'rate_limited',
          leaseId: 'x',
          reportedAt: new Date(clock.now().getTime() - 301_000),
        }),
      });
    }
    const live = {
      proxy: 'p1',
      proxyUid: UID,
      target: 'other.example',
      until: new Date(clock.now().getTime() + 60_000),
      reason: 'rate_limited' as const,
      leaseId: 'y',
      reportedAt: clock.now(),
    };
    batch.set(
      db.collection(LEASE_COLLECTIONS.cooldowns).doc(cooldownDocId('p1', 'other.example')),
      encodeCooldown(live),
    );
    await batch.commit();
    const reads: FirestoreRead[] = [];
    const s = new FirestoreLeaseStore(
      recordingFirestore(new Firestore({ projectId }), reads, { listens: true }),
      {
        ...storeClocks(clock),
        settings,
        log: quiet,
      },
    ).start();
    stores.push(s);
    await s.ready(10_000);
    expect(reads.filter((r) => r.how === 'listen' && r.collection === LEASE_COLLECTIONS.cooldowns)).toEqual([
      { collection: LEASE_COLLECTIONS.cooldowns, how: 'listen', docs: 1 },
    ]);
    expect(s.coolingDown(inst('p1'), 'other.example', clock.now())).toBe(true);
    expect(s.coolingDown(inst('p0'), 'site.example', clock.now())).toBe(false);
  });
});

describe('a grant given back with its Idempotency-Key record (release dropKey)', () => {
  const keyIntent = (recordId: string): KeyIntent => ({
    recordId,
    requestHash: 'h',
    expiresAt: new Date(clock.now().getTime() + 600_000),
    replaces: null,
  });
  async function keyedGrant(s: FirestoreLeaseStore, recordId: string, ttlSeconds = 60) {
    const g = await s.grant({
      candidates: [cand('p1')],
      lease: newLease({ ttlSeconds, key: keyIntent(recordId) }),
    });
    if (g.kind !== 'granted') throw new Error(`not granted: ${g.kind}`);
    const record = await s.findKey(recordId);
    if (!record) throw new Error('no key record');
    return { lease: g.lease, record };
  }

  it('releases the lease and deletes its record together while the record is the version read', async () => {
    const s = store();
    await s.ready(10_000);
    const { lease, record } = await keyedGrant(s, 'r1');
    expect(record).toMatchObject({ leaseId: lease.id, replayed: false });
    expect(await s.release(lease.id, { dropKey: { recordId: 'r1', version: record.version } })).toBe(true);
    expect((await s.find(lease.id))?.releasedAt).toEqual(clock.now());
    expect(await s.findKey('r1')).toBeNull();
  });

  it('once a replay has marked the record (on another replica), nothing is released or deleted', async () => {
    const a = store();
    const b = store();
    await Promise.all([a.ready(10_000), b.ready(10_000)]);
    const { lease, record } = await keyedGrant(a, 'r2');
    expect(await b.markReplayed('r2', record.version)).toBe(true);
    expect(await b.markReplayed('r2', record.version)).toBe(false); // that version is gone
    expect(await a.release(lease.id, { dropKey: { recordId: 'r2', version: record.version } })).toBe(false);
    expect((await a.find(lease.id))?.releasedAt).toBeNull();
    expect(a.usage(inst('p1'), clock.now()).active).toBe(1);
    expect(await a.findKey('r2')).toMatchObject({ leaseId: lease.id, replayed: true });
  });

  it('on a state edited into garbage too: a replay has marked the record, so the lease is not ended', async () => {
    const s = store();
    await s.ready(10_000);
    const { lease, record } = await keyedGrant(s, 'r5');
    expect(await s.markReplayed('r5', record.version)).toBe(true);
    await db.collection(LEASE_COLLECTIONS.leaseState).doc('p1').set({ entries: 'garbage' });
    clock.advance(1_001);
    expect(await s.release(lease.id, { dropKey: { recordId: 'r5', version: record.version } })).toBe(false);
    expect((await s.find(lease.id))?.releasedAt).toBeNull();
  });

  it('a lease already expired takes its record with it: the key is not spent by a lease nobody got', async () => {
    const s = store();
    await s.ready(10_000);
    const { lease, record } = await keyedGrant(s, 'r3', 5);
    clock.advance(6_000);
    expect(await s.release(lease.id, { dropKey: { recordId: 'r3', version: record.version } })).toBe(true);
    expect(await s.findKey('r3')).toBeNull();
    // A record another delivery wrote since is left as it is.
    const again = await keyedGrant(s, 'r4', 5);
    await s.markReplayed('r4', again.record.version);
    clock.advance(6_000);
    expect(
      await s.release(again.lease.id, { dropKey: { recordId: 'r4', version: again.record.version } }),
    ).toBe(false);
    expect(await s.findKey('r4')).toMatchObject({ leaseId: again.lease.id });
  });

  it("an ended lease's record whose delete fails in passing is deleted on a retry, not left to spend the key", async () => {
    const s = store();
    await s.ready(10_000);
    const { lease, record } = await keyedGrant(s, 'r6', 5);
    clock.advance(6_000);
    const realDelete = DocumentReference.prototype.delete;
    let failures = 1;
    DocumentReference.prototype.delete = function (this: DocumentReference, ...args) {
      if (this.path.startsWith('leaseKeys/') && failures-- > 0)
        return Promise.reject(Object.assign(new Error('unavailable'), { code: 14 }));
      return realDelete.apply(this, args);
    };
    try {
      expect(await s.release(lease.id, { dropKey: { recordId: 'r6', version: record.version } })).toBe(true);
    } finally {
      DocumentReference.prototype.delete = realDelete;
    }
    expect(failures).toBe(-1); // failed once, then went through
    expect(await s.findKey('r6')).toBeNull();
  });

  it('a grant writing over an expired record that was replayed clears the mark', async () => {
    const s = store();
    await s.ready(10_000);
    const first = await keyedGrant(s, 'r5');
    await s.markReplayed('r5', first.record.version);
    const marked = await s.findKey('r5');
    const g = await s.grant({
      candidates: [cand('p1')],
      lease: newLease({ key: { ...keyIntent('r5'), replaces: marked!.version } }),
    });
    expect(g.kind).toBe('granted');
    expect(await s.findKey('r5')).toMatchObject({
      leaseId: g.kind === 'granted' && g.lease.id,
      replayed: false,
    });
  });
});

describe('what a lease costs in reads: the figure docs/cost.md prices', () => {
  it("a grant and its release on one replica read nothing once it knows the proxy's state; a release on another reads the lease, then the state", async () => {
    const reads: { a: FirestoreRead[]; b: FirestoreRead[] } = { a: [], b: [] };
    const on = (r: FirestoreRead[]) => {
      const s = new FirestoreLeaseStore(
        recordingFirestore(new Firestore({ projectId }), r, { documents: true }),
        {
          ...storeClocks(clock),
          settings,
          log: quiet,
        },
      ).start();
      stores.push(s);
      return s;
    };
    const a = on(reads.a);
    const b = on(reads.b);
    await Promise.all([a.ready(10_000), b.ready(10_000)]);
    /** Point reads (documents, batched gets, transactions) since the last call: not the start's load. */
    const pointReads = (r: FirestoreRead[]) => {
      const n = r.filter((x) => x.how !== 'scan' && x.how !== 'query').reduce((m, x) => m + x.docs, 0);
      r.length = 0;
      return n;
    };
    const granted = async (s: FirestoreLeaseStore) => {
      const g = await s.grant({ candidates: [cand('p1')], lease: newLease() });
      if (g.kind !== 'granted') throw new Error(`not granted: ${g.kind}`);
      return g.lease.id;
    };
    pointReads(reads.a);
    pointReads(reads.b);

    // A proxy no replica has seen a state of: its first grant reads it once.
    await a.release(await granted(a));
    expect(pointReads(reads.a)).toBe(1);
    // Known now: a grant and its release on the same replica read nothing.
    await a.release(await granted(a));
    expect(pointReads(reads.a)).toBe(0);
    // Released on a replica that did not grant it: the lease (to learn its proxy), then the proxy's state
    // (its view lacks the lease).
    const id = await granted(a);
    await b.release(id);
    expect(pointReads(reads.a)).toBe(0);
    expect(pointReads(reads.b)).toBe(2);

    const cost = readFileSync(join(repoRoot, 'docs/cost.md'), 'utf8');
    expect(cost).toContain('4 writes, 0–3 reads');
  });
});
