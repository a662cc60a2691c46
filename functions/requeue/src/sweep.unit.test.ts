import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { driftOffsetMs } from '../../../shared/src/domain/reconcile/drift.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { PublishError } from '../../../shared/src/ports/publish-error.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { aProxy, externalSpec, testUid } from '../../../shared/src/testing/proxy-fixtures.js';
import { sweepResult } from './job-run.js';
import { LIST_DUE_GRACE_MS, runSweep, type SweepDeps } from './sweep.js';

const t0 = new Date('2026-03-01T00:00:00Z');
const at = (ms: number) => new Date(t0.getTime() + ms);

let store: InMemoryProxyStore;
let clock: ManualClock;
let published: Array<{ proxy: string; atMs: number }>;
/** The reason each proxy was last published with. */
let reasons: Map<string, string>;
let deps: SweepDeps;
let onPublish: (proxy: string) => Promise<void>;

beforeEach(() => {
  store = new InMemoryProxyStore();
  clock = new ManualClock(t0);
  published = [];
  reasons = new Map();
  onPublish = async () => {};
  deps = {
    store,
    publisher: {
      publish: async ({ proxy, reason }) => {
        reasons.set(proxy, reason);
        published.push({ proxy, atMs: clock.now().getTime() - t0.getTime() });
        await onPublish(proxy);
      },
    },
    clock,
    sleep: async (ms) => clock.advance(ms),
    log: memoryLogger(),
    tickPeriodMs: 60_000,
    marginMs: 1_000,
    pollMs: 1_000,
    driftPollMs: 60_000,
    batch: 2,
    maxBatch: 64,
  };
});

const running = () => ({
  phase: 'Ready' as const,
  providerId: 'zones/z/instances/i',
  nextReconcileAt: null,
});

const due = (name: string, ms: number | null) =>
  store.create(
    aProxy({ name, status: { nextReconcileAt: ms === null ? null : at(ms), phase: 'Provisioning' } }),
  );

describe('requeue sweep', () => {
  it('publishes each due proxy at its due time, within one invocation that ends before the next tick', async () => {
    await due('overdue', -30_000);
    await due('soon', 5_000);
    await due('later', 42_500);
    await due('next-window', 75_000);
    await due('idle', null);
    const report = await runSweep(deps, t0);
    expect(published).toEqual([
      { proxy: 'overdue', atMs: 0 },
      { proxy: 'soon', atMs: 5_000 },
      { proxy: 'later', atMs: 42_500 },
    ]);
    expect(report.due).toBe(3);
    expect([...new Set(reasons.values())]).toEqual(['requeue']);
    expect(clock.now().getTime() - t0.getTime()).toBeLessThanOrEqual(59_000);
  });

  // Listing the steady fleet is the sweep's one read of whole documents; at scale it is what hits a
  // deadline. It took the due loop with it: no Provisioning or deletion poll, backoff or queued
  // replacement was published while it kept failing.
  it.each<[string, () => Promise<never>]>([
    [
      'fails',
      async () => {
        throw new Error('PERMISSION_DENIED listing proxies');
      },
    ],
    // The client resends a query past its deadline for minutes: longer than the window.
    ['never answers within the window', () => new Promise<never>(() => {})],
  ])(
    'publishes the due proxies when the steady fleet’s listing %s, and records its drift slots skipped',
    async (_how, failing) => {
      await due('soon', 5_000);
      const uid = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
      await store.create(aProxy({ name: 'steady', uid, status: running() }));
      const listPage = store.listPage.bind(store);
      store.listPage = failing;
      const report = await runSweep({ ...deps, listingTimeoutMs: 20 }, t0);
      expect(published).toEqual([{ proxy: 'soon', atMs: 5_000 }]);
      expect(report).toMatchObject({ due: 1, drift: 0, driftSkipped: expect.any(Error) });
      expect(report.failure).toBeUndefined();
      expect(sweepResult(report)).toMatchObject({
        ok: false,
        error: expect.stringMatching(/^drift slots skipped: /),
      });
      // Its drift range is left to the next sweep, which lists the fleet again and covers it with its own:
      // the steady proxy's slot in the skipped range and the one in the next.
      expect(report.nextDriftFrom).toEqual(t0);
      store.listPage = listPage;
      published = [];
      clock.set(at(60_000));
      const next = await runSweep(deps, at(60_000), report.nextDriftFrom);
      expect(next.driftSkipped).toBeUndefined();
      expect(published.filter((p) => p.proxy === 'steady')).toHaveLength(2);
    },
  );

  // The steady fleet is listed every few sweeps (SteadyFleet), at scale for up to half the window; it was
  // awaited before the first poll, so every due time of such a sweep (Provisioning polls, backoffs, queued
  // replacements) waited behind it.
  it('polls the due times without waiting for a slow steady-fleet listing, and drift-polls once it lands', async () => {
    await due('overdue', -5_000);
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    let land!: () => void;
    const landing = new Promise<void>((resolve) => {
      land = resolve;
    });
    let landed = false;
    const listPage = store.listPage.bind(store);
    store.listPage = async (filter, page) => {
      await landing;
      landed = true;
      return listPage(filter, page);
    };
    const listDue = store.listDue.bind(store);
    const landedAtPoll: boolean[] = [];
    store.listDue = async (...args) => {
      landedAtPoll.push(landed);
      land(); // the listing answers only once the first poll has been made
      return listDue(...args);
    };
    const report = await runSweep({ ...deps, listingTimeoutMs: 2_000 }, t0);
    expect(landedAtPoll[0]).toBe(false);
    expect(report.driftSkipped).toBeUndefined();
    expect(published).toEqual([
      { proxy: 'overdue', atMs: 0 },
      { proxy: 'steady', atMs: driftOffsetMs(uid, 60_000) },
    ]);
  });

  it('picks up a due time written while it runs (a reconcile pass setting ProvisioningPoll)', async () => {
    await due('p', 1_000);
    onPublish = async (proxy) => {
      const s = (await store.get(proxy))!;
      const next = clock.now().getTime() + 5_000;
      if (next - t0.getTime() < 30_000) {
        await store.writeStatus(proxy, { ...s.proxy.status, nextReconcileAt: new Date(next) }, s.version);
      }
    };
    await runSweep(deps, t0);
    expect(published.map((p) => p.atMs)).toEqual([1_000, 6_000, 11_000, 16_000, 21_000, 26_000]);
  });

  it('drift-polls steady proxies once per DriftPoll on their slot, and writes nothing', async () => {
    const steady = {
      phase: 'Provisioned' as const,
      providerId: 'zones/z/instances/i',
      nextReconcileAt: null,
    };
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: steady }));
    await store.create(
      aProxy({ name: 'failed', status: { ...steady, phase: 'Failed', observedGeneration: 1 } }),
    );
    const writes = store.writes;
    const report = await runSweep(deps, t0);
    expect(published).toEqual([{ proxy: 'steady', atMs: driftOffsetMs(uid, 60_000) }]);
    expect(report.drift).toBe(1);
    // Its next slot polls again: a failed pass is not retried (reconcile's handler), so a Compute outage
    // does not pile a retry chain per DriftPoll on every steady proxy.
    expect(reasons.get('steady')).toBe('drift-poll');
    expect(store.writes).toBe(writes);
  });

  // Operator seed §1: the workqueue never drops a request (error backoff without end, periodic resync). Here
  // a request can be lost (the API's publish failed after its write) or dead-lettered (15 transient
  // failures); a proxy left needing a pass with no due time would never be reconciled again — a deleted
  // proxy's instance would run on. The sweep publishes such a proxy on its drift slot, one DriftPoll after
  // the request that should have reached it (so a request in flight lands first).
  it('publishes a proxy that needs a pass and has nothing scheduled (its request was lost)', async () => {
    const live = { ...running(), observedGeneration: 1 };
    const old = at(-120_000);
    const uids = { deleting: testUid(21), created: testUid(22), edited: testUid(23) };
    await store.create(
      aProxy({ name: 'deleting', uid: uids.deleting, deletionRequestedAt: old, status: live }),
    );
    await store.create(aProxy({ name: 'created', uid: uids.created, createdAt: old }));
    await store.create(
      aProxy({
        name: 'edited',
        uid: uids.edited,
        generation: 2,
        status: { ...live, phase: 'Failed', providerId: null },
      }),
    );
    // Nothing owed: a fresh request may still be on its way; a latched deletion; a latched failure.
    await store.create(aProxy({ name: 'just-created', createdAt: t0 }));
    await store.create(
      aProxy({ name: 'latched-delete', deletionRequestedAt: old, status: { ...live, phase: 'Deleting' } }),
    );
    await store.create(aProxy({ name: 'latched', status: { ...live, phase: 'Failed' } }));
    const external = aProxy({ name: 'external', spec: externalSpec(), status: { ...live, phase: 'Ready' } });
    await store.create(external);
    const writes = store.writes;
    await runSweep(deps, t0);
    expect(published.sort((a, b) => a.atMs - b.atMs)).toEqual(
      (['deleting', 'created', 'edited'] as const)
        .map((proxy) => ({ proxy, atMs: driftOffsetMs(uids[proxy], 60_000) }))
        .sort((a, b) => a.atMs - b.atMs),
    );
    // Nothing else asks for their pass: retried when it fails.
    expect([...new Set(reasons.values())]).toEqual(['requeue']);
    expect(store.writes).toBe(writes);
  });

  // A proxy whose passes keep failing (a provider outage) still awaits one, and Pub/Sub retries each
  // message for over an hour: a new one every DriftPoll would pile messages up. 1, 2, 4, 8, 16 DriftPolls
  // after the request, then every 16th.
  it('backs off republishing a proxy that still awaits its pass', async () => {
    const D = 60_000;
    const ago = (periods: number, n: number) =>
      aProxy({ name: `p${periods}`, uid: testUid(40 + n), createdAt: at(-periods * D) });
    // Requested 4, 3, 16, 24 and 32 periods before this window: its slot here is that many periods after.
    const ps = [ago(4, 0), ago(3, 1), ago(16, 2), ago(24, 3), ago(32, 4)];
    for (const p of ps) await store.create(p);
    await runSweep(deps, t0);
    expect(published.map((p) => p.proxy).sort()).toEqual(['p16', 'p32', 'p4']);
  });

  // An edit records no time to back off from: counted from the creation, a proxy weeks old was asked again
  // every 16th DriftPoll only, and leases handed out its old host with its new credentials meanwhile.
  it('publishes a proxy whose spec edit awaits its pass at its next slot, however old the proxy', async () => {
    const D = 60_000;
    const live = { ...running(), observedGeneration: 1 };
    const uids = { external: testUid(50), failed: testUid(51) };
    await store.create(
      aProxy({
        name: 'external',
        uid: uids.external,
        spec: externalSpec(),
        createdAt: at(-100 * D + 5_000),
        generation: 2,
        status: { ...live, providerId: null },
      }),
    );
    await store.create(
      aProxy({
        name: 'failed',
        uid: uids.failed,
        createdAt: at(-100 * D + 5_000),
        generation: 3,
        status: { ...live, phase: 'Failed', providerId: null },
      }),
    );
    await runSweep(deps, t0);
    expect(published.sort((a, b) => a.atMs - b.atMs)).toEqual(
      (['external', 'failed'] as const)
        .map((proxy) => ({ proxy, atMs: driftOffsetMs(uids[proxy], D) }))
        .sort((a, b) => a.atMs - b.atMs),
    );
  });

  it('does not let a full page of stuck proxies starve a newly due one', async () => {
    for (const n of ['s1', 's2', 's3', 's4']) await due(n, -60_000);
    await due('fresh', 10_000);
    await runSweep(deps, t0);
    expect(published.find((p) => p.proxy === 'fresh')?.atMs).toBe(10_000);
    expect(published.filter((p) => p.proxy === 's1')).toHaveLength(1);
  });

  it('reads proxies stuck overdue once per backlog walk, not once a poll', async () => {
    // Passes failing without writing through an outage: their due times stay in the past.
    for (let i = 0; i < 6; i++) await due(`stuck-${i}`, -60_000 + i);
    await due('fresh', 20_000);
    let stuckRead = 0;
    const listDue = store.listDue.bind(store);
    store.listDue = async (...args) => {
      const rows = await listDue(...args);
      stuckRead += rows.filter((r) => r.name.startsWith('stuck-')).length;
      return rows;
    };
    await runSweep({ ...deps, batch: 64 }, t0);
    expect(published.find((p) => p.proxy === 'fresh')?.atMs).toBe(20_000);
    // Four walks of the 59 s window (0, 15, 30, 45 s) read each stuck proxy; the polls between read none.
    expect(stuckRead).toBe(4 * 6);
  });

  it('more proxies stuck overdue than the largest page: the walk passes them, an older-overdue one behind too', async () => {
    for (let i = 0; i < 20; i++) await due(`stuck-${String(i).padStart(2, '0')}`, -60_000 + i);
    await due('behind', -10_000); // overdue for longer than the polls between walks look back
    await due('fresh', 10_000);
    await runSweep({ ...deps, batch: 2, maxBatch: 4 }, t0);
    expect(published.find((p) => p.proxy === 'behind')?.atMs).toBe(0);
    expect(published.find((p) => p.proxy === 'fresh')?.atMs).toBe(10_000);
    expect(published.filter((p) => p.proxy.startsWith('stuck-'))).toHaveLength(20);
  });

  it('one due time shared by more proxies than a page holds: the page is asked again larger', async () => {
    for (let i = 0; i < 5; i++) await due(`tied-${i}`, -60_000);
    await due('behind', -30_000);
    await runSweep({ ...deps, batch: 2, maxBatch: 8 }, t0);
    expect(
      published
        .filter((p) => p.atMs === 0)
        .map((p) => p.proxy)
        .sort(),
    ).toEqual(['behind', 'tied-0', 'tied-1', 'tied-2', 'tied-3', 'tied-4']);
  });

  it('a poll held up (a slow publish) leaves no due time unread: the next starts where the last ended', async () => {
    await due('slow', 16_000);
    await due('victim', 18_000);
    onPublish = async (proxy) => {
      if (proxy === 'slow') clock.advance(8_000); // a publish waiting out most of its deadline
    };
    await runSweep(deps, t0);
    // Polled again at 24 s: the range since the last poll's end (17 s) holds the victim.
    expect(published.find((p) => p.proxy === 'victim')!.atMs).toBeLessThan(25_000);
  });

  it('a failed publish is retried on a later poll', async () => {
    await due('flaky', 0);
    let fail = true;
    deps.publisher = {
      publish: async ({ proxy }) => {
        if (fail) {
          fail = false;
          throw new Error('unavailable');
        }
        published.push({ proxy, atMs: clock.now().getTime() - t0.getTime() });
      },
    };
    const report = await runSweep(deps, t0);
    expect(report.publishFailures).toBe(1);
    expect(published).toEqual([{ proxy: 'flaky', atMs: 1_000 }]);
  });

  it('a publish unconfirmed in time is held as published, not handed to the library again each poll', async () => {
    // A Pub/Sub brownout: the client library keeps each message and may still send it.
    await due('slow', 0);
    let attempts = 0;
    deps.publisher = {
      publish: async () => {
        attempts++;
        throw new PublishError('unconfirmed', 'not confirmed within 10000 ms; it may still go out');
      },
    };
    const report = await runSweep(deps, t0);
    expect(attempts).toBe(1);
    expect(report.publishFailures).toBe(1);
  });

  it('a due document whose id is no proxy name is held, said once, and fails no tick', async () => {
    // Its request fails the schema on every publish: counted a failure, every tick failed for good and the
    // document was published again on every walk.
    await due('Bad_Name', 0);
    let attempts = 0;
    deps.publisher = {
      publish: async () => {
        attempts++;
        throw new PublishError('invalid_payload', 'payload for reconcile-requests does not match its schema');
      },
    };
    const report = await runSweep(deps, t0);
    expect(attempts).toBe(1);
    expect(report.publishFailures).toBe(0);
    const { lines } = deps.log as ReturnType<typeof memoryLogger>;
    expect(lines.filter((l) => l.event === 'requeue.unpublishable')).toEqual([
      expect.objectContaining({ severity: 'ERROR', proxy: 'Bad_Name' }),
    ]);
  });

  it('a late tick (redelivered) sweeps once from now and stops', async () => {
    await due('overdue', -5_000);
    clock.set(at(120_000));
    await runSweep(deps, t0);
    expect(published).toEqual([{ proxy: 'overdue', atMs: 120_000 }]);
    expect(clock.now().getTime()).toBeLessThan(at(121_000).getTime());
  });

  // Its window is 1 ms long: on a clock that has moved on by the loop's first look (a slow machine, the
  // listing started before it), the window had closed and the tick polled nothing at all.
  it('a late tick polls once however far the clock moved before its loop began', async () => {
    await due('overdue', -5_000);
    clock.set(at(120_000));
    deps.clock = {
      now: () => {
        clock.advance(2);
        return clock.now();
      },
    };
    const report = await runSweep(deps, t0);
    expect(published.map((p) => p.proxy)).toEqual(['overdue']);
    expect(report.polls).toBeGreaterThan(0);
  });
});

describe('requeue sweeps of one instance', () => {
  it('do not publish a proxy again while its pass is on the way, but do once the memory expires', async () => {
    const { PublishMemory } = await import('./publish-memory.js');
    deps.memory = new PublishMemory(30_000);
    deps.tickPeriodMs = 2_000;
    deps.marginMs = 200;
    await due('slow', 500);
    for (let tick = 0; tick < 20; tick++) await runSweep(deps, clock.now());
    expect(published).toHaveLength(2);
    expect(published[0]?.atMs).toBe(500);
    expect(published[1]?.atMs).toBeGreaterThanOrEqual(30_500);
    expect(published[1]?.atMs).toBeLessThan(32_000);
  });
});

describe('drift slots between two ticks', () => {
  // Consecutive ticks are never exactly a period apart: Cloud Scheduler publishes each a varying moment
  // after its minute, and the local scheduler's chained timers run late. A slot between the end of one
  // tick's range and the next tick's publish time belonged to neither sweep, and its drift poll was lost:
  // a steady proxy waited a second DriftPoll, a proxy whose request was lost the next backed-off slot.
  it('publishes a slot that falls after the range of one tick and before the next tick', async () => {
    const { PublishMemory } = await import('./publish-memory.js');
    deps.memory = new PublishMemory(300_000);
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    const slot = driftOffsetMs(uid, 60_000) + 120_000; // ms after t0
    const first = at(slot - 60_200); // its range ends 200 ms before the slot
    const second = at(slot + 300); // published 60.5 s after the first
    clock.set(first);
    await runSweep(deps, first);
    clock.set(second);
    await runSweep(deps, second);
    // The last slot is past the second window's close (a margin before its range ends): published then.
    expect(published.map((p) => p.atMs)).toEqual([slot - 60_000, slot + 300, slot + 59_300]);
  });

  it('does not sweep again the range of a tick another instance swept', async () => {
    const { PublishMemory } = await import('./publish-memory.js');
    deps.memory = new PublishMemory(300_000);
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    const slot = driftOffsetMs(uid, 60_000) + 120_000;
    // This instance sweeps the ticks before and after the slot's; another one swept the slot's tick.
    const ticks = [slot - 90_000, slot + 30_000].map(at);
    for (const tick of ticks) {
      clock.set(tick);
      await runSweep(deps, tick);
    }
    expect(published.map((p) => p.atMs)).toEqual([slot - 60_000, slot + 60_000]);
  });

  it('makes up for the slots of a sweep that failed', async () => {
    const { PublishMemory } = await import('./publish-memory.js');
    deps.memory = new PublishMemory(300_000);
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    const slot = driftOffsetMs(uid, 60_000) + 120_000;
    const ticks = [slot - 90_000, slot - 30_000, slot + 30_000].map(at);
    clock.set(ticks[0]!);
    await runSweep(deps, ticks[0]!);
    // The second tick's sweep fails before the slot comes (Firestore unavailable).
    const listDue = store.listDue.bind(store);
    store.listDue = async (until, limit) => {
      if (clock.now().getTime() > at(slot - 10_000).getTime()) throw new Error('unavailable');
      return listDue(until, limit);
    };
    clock.set(ticks[1]!);
    expect((await runSweep(deps, ticks[1]!)).failure).toMatchObject({ message: 'unavailable' });
    store.listDue = listDue;
    clock.set(ticks[2]!);
    await runSweep(deps, ticks[2]!);
    expect(published.map((p) => p.atMs)).toEqual([slot - 60_000, slot + 30_000, slot + 60_000]);
  });

  it('makes up for a drift slot whose publish failed (no due time in Firestore for a poll to find)', async () => {
    const { PublishMemory } = await import('./publish-memory.js');
    deps.memory = new PublishMemory(300_000);
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    const slot = driftOffsetMs(uid, 60_000) + 120_000;
    const ticks = [slot - 90_000, slot - 30_000, slot + 30_000].map(at);
    onPublish = async () => {
      if (clock.now().getTime() === at(slot).getTime()) throw new Error('publish unavailable');
    };
    for (const tick of ticks) {
      clock.set(tick);
      await runSweep(deps, tick);
    }
    // slot: the publish that failed; slot + 30 s: the next sweep covers its range again, at once
    expect(published.map((p) => p.atMs)).toEqual([slot - 60_000, slot, slot + 30_000, slot + 60_000]);
  });

  it('another instance takes the range up where the last sweep recorded it ended', async () => {
    // Ticks alternate function instances, each with its own memory: the record (jobRuns/requeue-sweep
    // nextWindowStart) is what carries the range's end from one to the next.
    const { PublishMemory } = await import('./publish-memory.js');
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    const slot = driftOffsetMs(uid, 60_000) + 120_000;
    const first = at(slot - 60_200); // its range ends 200 ms before the slot
    const second = at(slot + 300);
    clock.set(first);
    const one = await runSweep({ ...deps, memory: new PublishMemory(300_000) }, first);
    expect(one.nextDriftFrom).toEqual(at(slot - 200));
    clock.set(second);
    await runSweep({ ...deps, memory: new PublishMemory(300_000) }, second, one.nextDriftFrom);
    expect(published.map((p) => p.atMs)).toEqual([slot - 60_000, slot + 300, slot + 59_300]);
  });

  it('another instance on a tick a little early starts past what the last sweep covered', async () => {
    const { PublishMemory } = await import('./publish-memory.js');
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    const slot = driftOffsetMs(uid, 60_000) + 120_000;
    const first = at(slot - 59_800);
    const second = at(slot - 200); // 59.6 s after the first: the slot is in both ticks' own ranges
    clock.set(first);
    const one = await runSweep({ ...deps, memory: new PublishMemory(300_000) }, first);
    clock.set(second);
    await runSweep({ ...deps, memory: new PublishMemory(300_000) }, second, one.nextDriftFrom);
    // Published by the first (at its window's close), not again by the second instance.
    expect(published.map((p) => p.atMs)).toEqual([slot - 800]);
  });

  it('another instance makes up for the range of a sweep that stopped early', async () => {
    const { PublishMemory } = await import('./publish-memory.js');
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    const slot = driftOffsetMs(uid, 60_000) + 120_000;
    const ticks = [slot - 30_000, slot + 30_000].map(at);
    const listDue = store.listDue.bind(store);
    store.listDue = async (until, limit) => {
      if (clock.now().getTime() > at(slot - 10_000).getTime()) throw new Error('unavailable');
      return listDue(until, limit);
    };
    clock.set(ticks[0]!);
    const one = await runSweep({ ...deps, memory: new PublishMemory(300_000) }, ticks[0]!);
    expect(one.failure).toMatchObject({ message: 'unavailable' });
    expect(one.nextDriftFrom).toEqual(ticks[0]);
    store.listDue = listDue;
    clock.set(ticks[1]!);
    await runSweep({ ...deps, memory: new PublishMemory(300_000) }, ticks[1]!, one.nextDriftFrom);
    expect(published.map((p) => p.atMs)).toEqual([slot + 30_000, slot + 60_000]);
  });

  it("an instance whose sweep failed unrecorded covers its range again though another's record is later", async () => {
    // Firestore failing fails the sweep's own record too: the next instance cannot know that range was not
    // covered, so the one whose sweep failed takes it up on its next tick, from the earlier of the two.
    const { PublishMemory } = await import('./publish-memory.js');
    const a = new PublishMemory(300_000);
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    const slot = driftOffsetMs(uid, 60_000) + 120_000;
    // t3 is published 3 s later after its minute than t1 was: its own failed range is a little over two
    // periods back.
    const [t1, t2, t3] = [slot - 30_000, slot + 30_000, slot + 93_000].map(at);
    const listDue = store.listDue.bind(store);
    store.listDue = async (until, limit) => {
      if (clock.now().getTime() > at(slot - 10_000).getTime()) throw new Error('unavailable');
      return listDue(until, limit);
    };
    clock.set(t1!);
    expect((await runSweep({ ...deps, memory: a }, t1!)).failure).toBeDefined();
    store.listDue = listDue;
    clock.set(t2!);
    const b = await runSweep({ ...deps, memory: new PublishMemory(300_000) }, t2!, null);
    clock.set(t3!);
    await runSweep({ ...deps, memory: a }, t3!, b.nextDriftFrom);
    // b: slot + 60 s; a at t3: the slot nobody published, at once (and slot + 60 s again), then slot + 120 s.
    expect(published.map((p) => p.atMs)).toEqual([
      slot + 60_000,
      slot + 93_000,
      slot + 93_000,
      slot + 120_000,
    ]);
  });

  it('publishes a slot once when two ticks are less than a period apart', async () => {
    const { PublishMemory } = await import('./publish-memory.js');
    deps.memory = new PublishMemory(300_000);
    const uid = testUid(7);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    const slot = driftOffsetMs(uid, 60_000) + 120_000;
    const first = at(slot - 59_800);
    const second = at(slot - 200); // published 59.6 s after the first
    clock.set(first);
    await runSweep(deps, first);
    clock.set(second);
    await runSweep(deps, second);
    // Published at the first window's close (the slot is past it, inside its range), not again.
    expect(published.map((p) => p.atMs)).toEqual([slot - 800]);
  });
});

describe('a sweep that fails', () => {
  // A sweep claims each (proxy, due time) in the instance's memory when it schedules it, and publishes it
  // at its due time. A sweep that failed in between (listDue: Firestore unavailable) left the claims of
  // what it never published: the next sweeps took them for published, and the proxy waited out the
  // memory (5 minutes deployed) instead of its due time.
  it('leaves nothing it did not publish claimed: the next sweep publishes it when due', async () => {
    const { PublishMemory } = await import('./publish-memory.js');
    deps.memory = new PublishMemory(300_000);
    await due('soon', 20_000);
    const listDue = store.listDue.bind(store);
    store.listDue = async (until, limit) => {
      // The poll at 19 s lists it (due within a poll); the one at 20 s, before it is published, fails.
      if (clock.now().getTime() >= at(19_500).getTime()) throw new Error('unavailable');
      return listDue(until, limit);
    };
    expect((await runSweep(deps, t0)).failure).toMatchObject({ message: 'unavailable' });
    expect(published).toEqual([]);
    store.listDue = listDue;
    clock.set(at(21_000));
    await runSweep(deps, at(21_000));
    expect(published).toEqual([{ proxy: 'soon', atMs: 21_000 }]);
  });
});

// The client resends a query for minutes when Firestore is degraded. A listDue that never answered held the
// sweep past its window and the function's timeout (120 s): cut off, the run recorded no end and logged no
// failed tick (failing_jobs stayed quiet through the brownout), and what it had scheduled stayed claimed in
// the instance's memory — or, answered late, went out in one burst.
describe('a sweep whose listDue never answers', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops shortly after its window, failed, with nothing it scheduled left claimed', async () => {
    // Real time (the bound is a timer), faked: the clock is Date, the sleeps are timers.
    vi.useFakeTimers({ now: t0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { PublishMemory } = await import('./publish-memory.js');
    const memory = new PublishMemory(300_000);
    const uid = testUid(7);
    const slot = driftOffsetMs(uid, 60_000);
    expect(slot).toBeGreaterThan(1_000);
    await store.create(aProxy({ name: 'steady', uid, status: running() }));
    // Due with the second poll (1 s): listed by the first, published after the second's answer.
    await due('edge', 1_000);
    const listDue = store.listDue.bind(store);
    let calls = 0;
    store.listDue = (until, limit, from) =>
      ++calls === 1 ? listDue(until, limit, from) : new Promise(() => {});
    let report: Awaited<ReturnType<typeof runSweep>> | undefined;
    void runSweep(
      {
        ...deps,
        memory,
        clock: { now: () => new Date() },
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      },
      t0,
    ).then((r) => {
      report = r;
    });
    // The window ends at 59 s; the stalled page (asked at 1 s) is waited for until then and the grace.
    await vi.advanceTimersByTimeAsync(59_000);
    expect(report).toBeUndefined();
    await vi.advanceTimersByTimeAsync(LIST_DUE_GRACE_MS + 100);
    expect(report).toBeDefined();
    expect(calls).toBe(2);
    expect(report!.failure).toMatchObject({ message: expect.stringMatching(/^listDue gave no answer/) });
    expect(sweepResult(report!)).toMatchObject({ ok: false, nextWindowStart: t0 });
    expect(published).toEqual([]);
    const now = Date.now();
    expect(memory.holds('edge', at(1_000).getTime(), now)).toBe(false);
    expect(memory.holds('steady', at(slot).getTime(), now)).toBe(false);
  });
});

describe('the steady fleet of one instance', () => {
  it('is listed once per refresh period, not every tick, and still drift-polled on its slots', async () => {
    const { SteadyFleet } = await import('./steady-fleet.js');
    const steady = {
      phase: 'Provisioned' as const,
      providerId: 'zones/z/instances/i',
      nextReconcileAt: null,
    };
    const uid = testUid(9);
    await store.create(aProxy({ name: 'steady', uid, status: steady }));
    let lists = 0;
    const listPage = store.listPage.bind(store);
    store.listPage = async (f, page) => {
      lists++;
      return listPage(f, page);
    };
    deps.steady = new SteadyFleet(30_000);
    deps.tickPeriodMs = 2_000;
    deps.marginMs = 200;
    for (let tick = 0; tick < 60; tick++) await runSweep(deps, clock.now());
    expect(lists).toBe(5 * 4); // five phases of one page each, listed at 0, 30, 60 and 90 s
    expect(published.filter((p) => p.proxy === 'steady').map((p) => p.atMs % 60_000)).toEqual([
      driftOffsetMs(uid, 60_000),
      driftOffsetMs(uid, 60_000),
    ]);
  });
});

describe('a steady-fleet listing longer than its sweep', () => {
  it('is shared by the next sweep, not started again beside it; a failed one is listed again', async () => {
    const { SteadyFleet } = await import('./steady-fleet.js');
    const fleet = new SteadyFleet(30_000);
    let loads = 0;
    let finish!: (proxies: never[]) => void;
    const slow = () => {
      loads++;
      return new Promise<never[]>((resolve) => {
        finish = resolve;
      });
    };
    const first = fleet.get(0, slow);
    const second = fleet.get(60_000, slow); // the next sweep, the first listing still running
    expect(loads).toBe(1);
    finish([]);
    expect(await first).toEqual([]);
    expect(await second).toEqual([]);
    expect(await fleet.get(10_000, slow)).toEqual([]); // listed at 0: fresh until 30 s
    expect(loads).toBe(1);
    const failing = () => {
      loads++;
      return Promise.reject(new Error('deadline'));
    };
    await expect(fleet.get(40_000, failing)).rejects.toThrow('deadline');
    const again = fleet.get(41_000, slow); // not the failed one
    expect(loads).toBe(3);
    finish([]);
    expect(await again).toEqual([]);
  });

  it('is shared for a while only: one that hangs does not hold every later sweep', async () => {
    const { SteadyFleet } = await import('./steady-fleet.js');
    const fleet = new SteadyFleet(30_000, 120_000);
    let loads = 0;
    const hangs = () => {
      loads++;
      return new Promise<never[]>(() => {});
    };
    void fleet.get(0, hangs);
    void fleet.get(60_000, hangs);
    expect(loads).toBe(1);
    expect(await fleet.get(120_000, async () => [])).toEqual([]);
  });
});

describe('stored documents that do not fit the model', () => {
  it('are logged by the drift poll on each listing (WARNING, names and field paths, never values)', async () => {
    const log = memoryLogger();
    const issue = { path: 'spec.port', code: 'invalid_type', message: 'stored value hunter2 is no port' };
    const listPage: SweepDeps['store']['listPage'] = async (filter, page) => {
      const listing = await store.listPage(filter, page);
      return filter.phase === 'Ready'
        ? { ...listing, skipped: [{ name: 'edge-broken', issues: [issue] }] }
        : listing;
    };
    await store.create(aProxy({ name: 'steady', uid: testUid(1), status: running() }));
    await runSweep({ ...deps, log, store: { listDue: (u, l) => store.listDue(u, l), listPage } }, t0);
    const lines = log.lines.filter((l) => l.event === 'requeue.invalid_documents_skipped');
    expect(lines).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        count: 1,
        proxies: [{ name: 'edge-broken', fields: ['spec.port'] }],
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('hunter2');
    // The fleet that fits is still drift-polled.
    expect(published.map((p) => p.proxy)).toEqual(['steady']);
  });

  it('are logged past 20 as their count and the first 20, truncated', async () => {
    const log = memoryLogger();
    const skipped = Array.from({ length: 25 }, (_, i) => ({
      name: `edge-broken-${i}`,
      issues: [{ path: 'spec.port', code: 'invalid_type', message: 'x' }],
    }));
    const listPage: SweepDeps['store']['listPage'] = async (filter, page) => {
      const listing = await store.listPage(filter, page);
      return filter.phase === 'Ready' ? { ...listing, skipped } : listing;
    };
    await runSweep({ ...deps, log, store: { listDue: (u, l) => store.listDue(u, l), listPage } }, t0);
    expect(log.lines.filter((l) => l.event === 'requeue.invalid_documents_skipped')).toEqual([
      expect.objectContaining({
        count: 25,
        proxies: skipped.slice(0, 20).map((s) => ({ name: s.name, fields: ['spec.port'] })),
        truncated: true,
      }),
    ]);
  });

  it('log nothing when every document fits', async () => {
    const log = memoryLogger();
    await store.create(aProxy({ name: 'steady', uid: testUid(1), status: running() }));
    await runSweep({ ...deps, log }, t0);
    expect(log.lines.filter((l) => l.event === 'requeue.invalid_documents_skipped')).toEqual([]);
  });
});
