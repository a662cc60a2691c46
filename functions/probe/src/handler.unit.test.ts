import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLAIM_TIMEOUT_MS, RECORD_MARGIN_MS } from '../../../shared/src/adapters/bounded-job-runs.js';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { isDueInWindow } from '../../../shared/src/domain/health/due.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import type { JobRun, JobRunStore } from '../../../shared/src/ports/job-runs.js';
import { PassiveFeedError } from '../../../shared/src/ports/passive-feed.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import { fixedFleet, fixedView } from '../../../shared/src/testing/fixed-proxy-view.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { aProxy, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { onProbeEvent } from './event.js';
import { handleProbeTick, MIN_PASS_BUDGET_MS, type ProbeHandlerDeps, ProbeJob } from './handler.js';
import { PASSIVE_TEST_SETTINGS } from './passive-fixtures.unit.js';
import { echoUp, stoppedWithAddress } from './prober-fixtures.unit.js';
import { tickEvent } from './tick-event-fixture.unit.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const sec = (s: number) => new Date(t0.getTime() + s * 1000);

function deps(passiveFails: boolean, passiveError = new PassiveFeedError('unavailable', 'firestore down')) {
  const warnings: string[] = [];
  const errors: Array<Record<string, unknown>> = [];
  const finished: Array<Pick<JobRun, 'ok' | 'counts'>> = [];
  const jobs: JobRunStore = {
    get: async () => null,
    claim: async () => ({ previous: null }),
    finish: async (_job, run) => void finished.push(run),
    list: async () => [],
  };
  const d: ProbeHandlerDeps = {
    proxies: fixedFleet([]),
    routing: { get: async () => null },
    jobs,
    clock: new ManualClock(new Date('2026-01-01T00:00:00Z')),
    sleep: async () => {},
    tickPeriodMs: 60_000,
    loopMs: 0,
    health: {
      getMany: async () => new Map(),
      get: async () => null,
      writeMany: async (writes) => writes.map(() => 'written' as const),
      deleteMany: async () => {},
      listNames: async () => [],
    },
    publisher: { publish: async () => {} },
    secrets: { access: async () => '' },
    prober: { probe: async () => ({}) as never, handshake: async () => ({}) as never, direct: echoUp },
    log: {
      info: () => {},
      warn: (m) => void warnings.push(m),
      error: (message, fields) => void errors.push({ message, ...fields }),
    },
    recorder: { observe: () => {} },
    tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
    concurrency: 1,
    passive: {
      outcomes: { between: async () => [] },
      feed: {
        cursor: async () => {
          if (passiveFails) throw passiveError;
          return null;
        },
        commit: async () => 'committed' as const,
      },
      ...PASSIVE_TEST_SETTINGS,
    },
  };
  return { d, warnings, errors, finished };
}

describe('handleProbeTick and the passive pass', () => {
  it('a healthy outcome feed: nothing logged', async () => {
    const { d, warnings, errors, finished } = deps(false);
    expect(await handleProbeTick(d)).toMatchObject({ passes: 1, outcomeBatches: 0, passiveSignals: 0 });
    expect([warnings, errors]).toEqual([[], []]);
    expect(finished).toEqual([expect.objectContaining({ ok: true })]);
  });

  it('an unavailable outcome feed: the active passes still run, and the tick is logged failed (part passive), which failing_jobs counts', async () => {
    const { d, warnings, errors, finished } = deps(true);
    expect(await handleProbeTick(d)).toMatchObject({ passes: 1, outcomeBatches: 0, passiveSignals: 0 });
    expect(warnings).toEqual([]);
    expect(errors).toEqual([
      {
        message: 'scheduled tick failed',
        event: 'job.tick_failed',
        job: 'probe-tick',
        part: 'passive',
        error: 'firestore down',
      },
    ]);
    expect(missingContractFields(errors[0]!)).toEqual([]);
    // Recorded ok (the active tiers ran), saying what of it failed.
    expect(finished).toEqual([expect.objectContaining({ ok: true, error: 'passive pass: firestore down' })]);
  });

  it('a passive failure without a message is still a failed tick (not taken for none)', async () => {
    const { d, errors, finished } = deps(true, new PassiveFeedError('unavailable', ''));
    await handleProbeTick(d);
    expect(errors).toEqual([
      expect.objectContaining({ event: 'job.tick_failed', part: 'passive', error: '' }),
    ]);
    expect(finished).toEqual([expect.objectContaining({ ok: true, error: 'passive pass: failed' })]);
  });

  it('a run that fails after its passive pass failed logs no passive line: one failed-tick line a tick (its caller logs the run)', async () => {
    const { d, errors, finished } = deps(true);
    d.routing = { get: async () => Promise.reject(new TypeError('a bug')) };
    await expect(handleProbeTick(d)).rejects.toThrow('a bug');
    expect(errors).toEqual([]);
    expect(finished).toEqual([expect.objectContaining({ ok: false, error: 'a bug' })]);
  });
});

describe('handleProbeTick and proxies it does not dial', () => {
  it('does not keep the invocation waking for the slots of a managed proxy whose instance is down', async () => {
    const stopped = stoppedWithAddress(t0);
    const { d, finished } = deps(false);
    let sleeps = 0;
    const summary = await handleProbeTick({
      ...d,
      loopMs: 120_000,
      sleep: async (ms) => {
        sleeps++;
        (d.clock as ManualClock).advance(ms);
      },
      proxies: fixedFleet([stopped]),
    });
    expect(summary).toMatchObject({ passes: 1, probed: 0 });
    expect(sleeps).toBe(0);
    expect(finished).toEqual([expect.objectContaining({ ok: true })]);
  });
});

describe('handleProbeTick follows the fleet through its loop', () => {
  // The loop ran every pass on the run's first listing: an address reconcile withdrew meanwhile (an instance
  // seen stopped — GCE may hand its ephemeral address to another project's VM) was still dialled, with the
  // proxy's credentials, for up to the whole loop; so was a proxy whose deletion had been requested.
  it.each([
    [
      'its address withdrawn (instance seen stopped)',
      (p: ProxyResource) => ({ ...p, status: { ...p.status, ip: null } }),
    ],
    ['its deletion requested', (p: ProxyResource) => ({ ...p, deletionRequestedAt: sec(1) })],
  ])('a proxy %s during the run is not dialled again', async (_n, change) => {
    const { d, finished } = deps(false);
    const clock = d.clock as ManualClock;
    const store = new InMemoryProxyStore();
    await store.create(
      aProxy({ name: 'p', status: { ip: '10.0.0.1', providerId: 'zones/z/instances/p', phase: 'Ready' } }),
    );
    const dials: Array<{ at: number; host: string }> = [];
    const answer = async (target: { host: string }) => {
      dials.push({ at: clock.now().getTime(), host: target.host });
      return { ok: true, latencyMs: 1, status: 200, body: null, failure: null };
    };
    let changedAt: number | null = null;
    await handleProbeTick({
      ...d,
      proxies: store,
      loopMs: 50_000,
      prober: { direct: echoUp, handshake: answer, probe: answer },
      sleep: async (ms) => {
        if (changedAt === null) {
          // Reconcile's write (or the API's), as the loop waits for the next slot.
          const stored = (await store.get('p'))!;
          const next = change(stored.proxy);
          if (next.deletionRequestedAt) await store.requestDeletion('p', next.deletionRequestedAt);
          else expect(await store.writeStatus('p', next.status, stored.version)).toBe('written');
          changedAt = clock.now().getTime();
        }
        clock.advance(ms);
      },
    });
    expect(changedAt).not.toBeNull(); // the loop waited at least once
    expect(dials.filter((x) => x.at > changedAt!)).toEqual([]);
    expect(finished).toEqual([expect.objectContaining({ ok: true })]);
  });

  it('a view that stopped following fails the run: nothing is dialled on it', async () => {
    const { d, finished } = deps(false);
    const clock = d.clock as ManualClock;
    const p = aProxy({
      name: 'p',
      status: { ip: '10.0.0.1', providerId: 'zones/z/instances/p', phase: 'Ready' },
    });
    let failure: Error | null = null;
    let stopped = false;
    let dialled = 0;
    let dialledBefore: number | null = null;
    const answer = async () => {
      dialled++;
      return { ok: true, latencyMs: 1, status: 200, body: null, failure: null };
    };
    const run = handleProbeTick({
      ...d,
      proxies: {
        watchAll: async () => ({
          current: () => ({ proxies: [p], skipped: [] }),
          failure: () => failure,
          stop: () => {
            stopped = true;
          },
        }),
      },
      loopMs: 50_000,
      prober: { direct: echoUp, handshake: answer, probe: answer },
      sleep: async (ms) => {
        failure = new Error('listener: permission denied');
        dialledBefore = dialled;
        clock.advance(ms);
      },
    });
    await expect(run).rejects.toThrow('permission denied');
    expect(dialledBefore).not.toBeNull(); // the loop waited once
    expect(dialled).toBe(dialledBefore);
    expect(stopped).toBe(true);
    expect(finished).toEqual([expect.objectContaining({ ok: false })]);
  });
});

describe('handleProbeTick and the stored routing (the TARGET tier)', () => {
  const p = aProxy({
    name: 'p',
    spec: managedSpec({ gatewayPool: true }),
    status: { ip: '10.0.0.1', providerId: 'zones/z/instances/p' },
  });
  const routes = [
    {
      name: 'shop',
      match: { hosts: ['shop.example'] },
      selector: {},
      policy: 'round-robin' as const,
      targetCheck: { url: 'http://shop.example/', expectedStatus: 200 },
    },
  ];
  const stored = { routes, updatedAt: t0, updatedBy: 'admin', droppedDuplicates: [] };

  it.each<[string, () => Promise<unknown>, string[], string[]]>([
    ['a stored routing: read once a tick, its checks run', async () => stored, ['http://shop.example/'], []],
    ['no routing stored: no TARGET check', async () => null, [], []],
    [
      'an unavailable routing store: logged, BASIC still runs, no TARGET check',
      async () => {
        throw new WorkerStoreError('unavailable', 'firestore down');
      },
      [],
      ['routing could not be read; no TARGET checks this tick, TARGET tracks kept'],
    ],
  ])('%s', async (_name, get, targetUrls, expectedWarnings) => {
    const { d, warnings, finished } = deps(false);
    const urls: string[] = [];
    let reads = 0;
    const summary = await handleProbeTick({
      ...d,
      loopMs: 120_000,
      sleep: async (ms) => (d.clock as ManualClock).advance(ms),
      proxies: fixedFleet([p]),
      routing: {
        get: async () => {
          reads++;
          return (await get()) as never;
        },
      },
      prober: {
        direct: echoUp,
        handshake: async () => ({ ok: true, latencyMs: 5, status: 200, body: null, failure: null }),
        probe: async (_t, o) => {
          urls.push(o.url);
          return { ok: true, latencyMs: 5, status: 200, body: null, failure: null };
        },
      },
    });
    // Several passes (the loop) over one read.
    expect(summary!.passes).toBeGreaterThan(1);
    expect(summary!.probed).toBeGreaterThan(1);
    expect(reads).toBe(1);
    expect(new Set(urls)).toEqual(new Set(targetUrls));
    expect(warnings).toEqual(expectedWarnings);
    expect(finished).toEqual([expect.objectContaining({ ok: true })]);
  });

  it('an error the adapter did not classify is a bug: the run fails', async () => {
    const { d, finished } = deps(false);
    const broken = { get: async () => Promise.reject(new TypeError('boom')) };
    await expect(handleProbeTick({ ...d, routing: broken })).rejects.toThrow('boom');
    expect(finished).toEqual([expect.objectContaining({ ok: false })]);
  });
});

describe('handleProbeTick: where a run starts probing', () => {
  // Deployed: a 60 s tick that keeps probing for 50 s; one probe a minute per proxy.
  const fleet40 = Array.from({ length: 40 }, (_, i) =>
    aProxy({
      name: `p${i}`,
      spec: managedSpec({ healthCheck: { intervalSeconds: 60 } }),
      status: { ip: `10.0.${i}.1`, providerId: `zones/z/instances/p${i}` },
    }),
  );

  /** A probe deployment whose sleep moves the clock, recording each probe's proxy and time. */
  function loop(previous: () => JobRun | null, fleet = fleet40) {
    const { d } = deps(false);
    const clock = new ManualClock(t0);
    const probes: Array<{ host: string; at: number }> = [];
    let last: JobRun | null = null;
    let listingFails = false;
    const runs: ProbeHandlerDeps = {
      ...d,
      clock,
      loopMs: 50_000,
      sleep: async (ms) => clock.advance(ms),
      proxies: {
        watchAll: async () => {
          if (listingFails) throw new Error('firestore unavailable');
          return fixedView({ proxies: fleet, skipped: [] });
        },
      },
      jobs: {
        ...d.jobs,
        claim: async (_job, now, _gap, deadline) => {
          const prev = previous() ?? last;
          last = {
            job: ProbeJob,
            startedAt: now,
            finishedAt: null,
            ok: null,
            counts: {},
            error: null,
            deadline: deadline ?? null,
          };
          return { previous: prev };
        },
        // An update, as the store's: the deadline recorded at the claim stays.
        finish: async (_job, run) => {
          last = { job: ProbeJob, deadline: last?.deadline ?? null, ...run };
        },
      },
      prober: {
        probe: async () => ({}) as never,
        direct: echoUp,
        handshake: async (target) => {
          probes.push({ host: target.host, at: clock.now().getTime() });
          return { ok: true, latencyMs: 5, status: 200, body: null, failure: null };
        },
      },
    };
    /** Runs one tick at `at` (seconds after t0); returns how often each proxy was probed in it. */
    const tick = async (at: number) => {
      clock.set(sec(at));
      probes.length = 0;
      await handleProbeTick(runs);
      const perProxy = new Map(fleet.map((p) => [p.status.ip!, 0]));
      for (const p of probes) perProxy.set(p.host, (perProxy.get(p.host) ?? 0) + 1);
      return { perProxy: [...perProxy.values()], times: probes.map((p) => p.at) };
    };
    /** A tick whose run fails before it probes anything (the fleet cannot be listed): it stores nothing. */
    const failingTick = async (at: number) => {
      clock.set(sec(at));
      listingFails = true;
      await expect(handleProbeTick(runs)).rejects.toThrow('firestore unavailable');
      listingFails = false;
    };
    /** Another deployment's loop for the ticks after (PROBE_LOOP_SECONDS changed). */
    const redeploy = (loopMs: number) => {
      runs.loopMs = loopMs;
    };
    return { tick, failingTick, redeploy };
  }

  it('after a run that finished: every proxy once per interval, at its own slot', async () => {
    const { tick } = loop(() => null);
    await tick(0);
    const second = await tick(60);
    expect(second.perProxy).toEqual(fleet40.map(() => 1));
    // The slots the first run covered (up to 50 s) are not probed again at the tick instant.
    expect(second.times.filter((t) => t === sec(60).getTime())).toHaveLength(
      fleet40.filter((p) => slotIn(p.uid, 50, 60)).length,
    );
    const third = await tick(120);
    expect(third.perProxy).toEqual(fleet40.map(() => 1));
  });

  it('after a deploy that changed the loop: from the previous run’s own deadline, as its record holds it', async () => {
    const { tick, redeploy } = loop(() => null);
    await tick(0); // looped 50 s: probed every slot up to 50 s
    redeploy(0);
    const second = await tick(60);
    // One pass over (50, 60]. From 0 + this deployment's loop (0), it probed (0, 60]: every proxy whose
    // slot the previous run had probed in (0, 50] again, its result counted twice.
    expect(second.perProxy).toEqual(fleet40.map((p) => (slotIn(p.uid, 50, 60) ? 1 : 0)));
  });

  it('after a failed run: its window again (some proxies twice, none skipped)', async () => {
    // It took its window up at the deadline of the run before it (-10 s) and failed.
    const failed: JobRun = {
      job: ProbeJob,
      startedAt: sec(0),
      finishedAt: sec(3),
      ok: false,
      counts: {},
      error: 'x',
      windowStart: sec(-10),
    };
    const { tick } = loop(() => failed);
    const run = await tick(60);
    expect(Math.min(...run.perProxy)).toBe(1);
    // The first pass, at 60 s, probes every proxy (a slot in (-10, 60]); the later ones those due again
    // half an interval or more after it (check-spacing.ts: one due sooner waits for its next slot).
    expect(fleet40.some((p) => slotIn(p.uid, 90, 110))).toBe(true);
    expect(run.perProxy.filter((n) => n === 2).length).toBe(
      fleet40.filter((p) => slotIn(p.uid, 90, 110)).length,
    );
  });

  /** 300 proxies on five-minute intervals: a slot missed waits five minutes for the next. */
  const fiveMinuteFleet = () =>
    Array.from({ length: 300 }, (_, i) =>
      aProxy({
        name: `q${i}`,
        spec: managedSpec({ healthCheck: { intervalSeconds: 300 } }),
        status: { ip: `10.1.${i >> 8}.${i & 255}`, providerId: `zones/z/instances/q${i}` },
      }),
    );

  it('after a failed run: the slots between the deadline before it and its start are probed now, not an interval late', async () => {
    // Five-minute intervals: a slot missed waits five minutes for the next. Enough proxies that some have
    // their slot in the 10 s between a run's deadline and the next tick.
    const fleet = fiveMinuteFleet();
    const inGap = fleet.filter((p) => isDueInWindow(p.uid, 300_000, sec(50), sec(60)));
    expect(inGap.length).toBeGreaterThan(0);
    const { tick, failingTick } = loop(() => null, fleet);
    await tick(0); // finished: probed every slot up to its deadline, 50 s
    await failingTick(60); // its window started at 50 s; it stored nothing
    const run = await tick(120);
    const probed = new Map(fleet.map((p, i) => [p.uid, run.perProxy[i]!]));
    // Before: the run after the failed one started at the failed run's start (60 s), and these proxies
    // waited for their next slot, five minutes on.
    expect(inGap.map((p) => probed.get(p.uid))).toEqual(inGap.map(() => 1));
  });

  it('after two failed runs in a row: the window of the first is probed again', async () => {
    const fleet = fiveMinuteFleet();
    const missed = fleet.filter((p) => isDueInWindow(p.uid, 300_000, sec(50), sec(180)));
    const { tick, failingTick } = loop(() => null, fleet);
    await tick(0);
    await failingTick(60);
    await failingTick(120);
    const run = await tick(180);
    const probed = new Map(fleet.map((p, i) => [p.uid, run.perProxy[i]!]));
    expect(missed.length).toBeGreaterThan(0);
    expect(missed.every((p) => probed.get(p.uid)! >= 1)).toBe(true);
  });

  it.each([
    ['its deadline passed: from there', 0, 50],
    ['its deadline is ahead (loop longer than the tick): from its deadline', 30, 80],
  ])('after a run still recorded as running, %s', async (_n, startedAt, covered) => {
    const running: JobRun = {
      job: ProbeJob,
      startedAt: sec(startedAt),
      finishedAt: null,
      ok: null,
      counts: {},
      error: null,
    };
    const { tick } = loop(() => running);
    const run = await tick(60);
    expect(Math.max(...run.perProxy)).toBe(1);
    expect(run.perProxy.reduce((a, b) => a + b)).toBe(
      fleet40.filter((p) => slotIn(p.uid, covered, 110)).length,
    );
    expect(run.times.every((t) => t > sec(covered).getTime())).toBe(true);
  });
});

/** The proxy has a 60 s slot in (from, to] seconds after t0. */
const slotIn = (uid: string, from: number, to: number) => isDueInWindow(uid, 60_000, sec(from), sec(to));

/** 40 proxies probed once a minute. */
const fleet = Array.from({ length: 40 }, (_, i) =>
  aProxy({
    name: `p${i}`,
    spec: managedSpec({ healthCheck: { intervalSeconds: 60 } }),
    status: { ip: `10.0.${i}.1`, providerId: `zones/z/instances/p${i}` },
  }),
);

/**
 * Deployed runs over `fleet` (a 60 s tick probing for 50 s) chained as the job-run store chains them: each
 * claim hands on the record the run before finished (the first, a run of the tick before that finished).
 * `handshake` records `probes` (each proxy's probe times) before it does what the test says.
 */
function chainedRuns(
  d: ProbeHandlerDeps,
  clock: ManualClock,
  handshake: (at: number) => Promise<void>,
  extra: Partial<ProbeHandlerDeps> = {},
) {
  const probes = new Map<string, number[]>();
  let last: JobRun | null = {
    job: ProbeJob,
    startedAt: sec(-60),
    finishedAt: sec(-8),
    ok: true,
    counts: {},
    error: null,
  };
  const runs: ProbeHandlerDeps = {
    ...d,
    clock,
    concurrency: 64,
    loopMs: 50_000,
    sleep: async (ms) => clock.advance(ms),
    proxies: fixedFleet(fleet),
    jobs: {
      ...d.jobs,
      claim: async (_job, now) => {
        const previous = last;
        last = { job: ProbeJob, startedAt: now, finishedAt: null, ok: null, counts: {}, error: null };
        return { previous };
      },
      finish: async (_job, run) => {
        last = { job: ProbeJob, ...run };
      },
    },
    prober: {
      probe: async () => ({}) as never,
      direct: echoUp,
      handshake: async (target) => {
        const at = clock.now().getTime();
        probes.set(target.host, [...(probes.get(target.host) ?? []), at]);
        await handshake(at);
        return { ok: false, latencyMs: 1, status: null, body: null, failure: null };
      },
    },
    ...extra,
  };
  return { runs, probes, last: () => last };
}

describe('handleProbeTick: a pass that runs past the deadline', () => {
  // Deployed: a 60 s tick that keeps probing for 50 s, one probe a minute per proxy — and probes that take
  // their time (a dead proxy costs its timeoutSeconds), so a pass started before the deadline ends after it.

  it('leaves the slots past the deadline to the next run: no proxy is probed twice for one slot', async () => {
    const { d } = deps(false);
    const clock = new ManualClock(t0);
    // Each probe runs into its timeout; the pass's probes run at once, so the pass takes 3 s.
    const { runs, probes } = chainedRuns(d, clock, async (at) => {
      await Promise.resolve();
      if (clock.now().getTime() === at) clock.advance(3_000);
    });
    for (const at of [0, 60, 120]) {
      clock.set(sec(at));
      await handleProbeTick(runs);
    }
    // One slot a minute: two probes of a proxy are about a minute apart, never seconds (which would count
    // a dead proxy's failures twice as fast as its interval says, and turn it Unhealthy early).
    const gaps = [...probes.values()].flatMap((ts) => ts.slice(1).map((t, i) => t - ts[i]!));
    expect(gaps.length).toBeGreaterThan(0);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(30_000);
  });
});

describe('handleProbeTick: a pass that begins late (check-spacing.ts)', () => {
  // Proxies on 30 s intervals; a pass begun late checks some for a slot long past, and their next slot comes
  // seconds later: checked twice in a moment, a dead proxy's failures were counted twice as fast as its
  // interval says (Unhealthy an interval or more before its failureThreshold).
  const fleet30 = Array.from({ length: 40 }, (_, i) =>
    aProxy({
      name: `h${i}`,
      spec: managedSpec({ healthCheck: { intervalSeconds: 30 } }),
      status: { ip: `10.2.${i}.1`, providerId: `zones/z/instances/h${i}` },
    }),
  );
  const gapsOf = (probes: Map<string, number[]>) =>
    [...probes.values()].flatMap((ts) => ts.slice(1).map((t, i) => t - ts[i]!));

  /** Runs chained over fleet30 whose first pass (at 0 s) hangs until `release`. */
  function hangingFirstPass() {
    const { d } = deps(false);
    const clock = new ManualClock(t0);
    let release!: () => void;
    const hung = new Promise<void>((r) => {
      release = r;
    });
    const chained = chainedRuns(
      d,
      clock,
      async (at) => {
        if (at === t0.getTime()) await hung;
      },
      { proxies: fixedFleet(fleet30) },
    );
    return { clock, release, ...chained };
  }

  it.each([30, 120])(
    'with no loop (PROBE_LOOP_SECONDS 0), %i s intervals: no proxy is left out run after run',
    async (intervalSeconds) => {
      // Its deadline is its start, and its one pass begins a little after (the claim, the listing): a pass
      // "past the deadline" every run. Leaving out the proxies due from there to half an interval on left
      // the same ones out every run, never probed: the next run checks only up to its own start.
      const fleet = Array.from({ length: 200 }, (_, i) =>
        aProxy({
          name: `n${i}`,
          spec: managedSpec({ healthCheck: { intervalSeconds } }),
          status: { ip: `10.3.${i}.1`, providerId: `zones/z/instances/n${i}` },
        }),
      );
      const { d } = deps(false);
      const clock = new ManualClock(t0);
      const { runs, probes } = chainedRuns(d, clock, async () => {}, {
        loopMs: 0,
        proxies: {
          watchAll: async () => {
            clock.advance(1_000);
            return fixedView({ proxies: fleet, skipped: [] });
          },
        },
      });
      for (let tick = 0; tick < 30; tick++) {
        clock.set(sec(60 * tick));
        await handleProbeTick(runs);
      }
      expect(fleet.filter((p) => !probes.has(p.status.ip!)).map((p) => p.name)).toEqual([]);
      // Nor checked more than one and a half intervals apart (a slot left to the next run, which checks it).
      const gaps = gapsOf(probes);
      expect(Math.max(...gaps)).toBeLessThanOrEqual(1.5 * intervalSeconds * 1000 + 60_000);
    },
  );

  it('within a run: a proxy checked less than half an interval ago waits for its next slot', async () => {
    const { clock, release, runs, probes } = hangingFirstPass();
    const run = handleProbeTick(runs);
    await vi.waitFor(() => expect(probes.size).toBeGreaterThan(0));
    clock.set(sec(25)); // the first pass's checks end at 25 s: the next pass covers (0, 25]
    release();
    await run;
    const gaps = gapsOf(probes);
    expect(gaps.length).toBeGreaterThan(0);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(15_000);
    // None starves: every proxy was checked in the run's 50 s, which hold one or two of its slots.
    expect(fleet30.every((p) => (probes.get(p.status.ip!)?.length ?? 0) >= 1)).toBe(true);
  });

  it('at the deadline: a late pass leaves to the next run the proxies it checks within half an interval', async () => {
    // Run A's first pass (0 s) hangs until 60 s; its late pass then covers (0, 50], cut at its deadline,
    // while run B, claimed at 60 s, probes (50, 60] and the slots after. On 30 s intervals a proxy whose
    // slot phase is in (20, 30] has a slot in both windows: probed by each at 60 s.
    const { clock, release, runs, probes } = hangingFirstPass();
    const a = handleProbeTick(runs);
    await vi.waitFor(() => expect(probes.size).toBeGreaterThan(0));
    clock.set(sec(60));
    release();
    await Promise.all([a, handleProbeTick(runs)]);
    const both = fleet30.filter(
      (p) => isDueInWindow(p.uid, 30_000, sec(0), sec(50)) && isDueInWindow(p.uid, 30_000, sec(50), sec(60)),
    );
    expect(both.length).toBeGreaterThan(0);
    const gaps = gapsOf(probes);
    expect(gaps.length).toBeGreaterThan(0);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(15_000);
    // Not lost: each of them probed at 60 s, by run B.
    for (const p of both) expect(probes.get(p.status.ip!), p.name).toContain(sec(60).getTime());
  });
});

describe('handleProbeTick: a run whose budget is spent before its deadline', () => {
  // A 50 s loop and a budget of 20 s: a first pass whose probes hang (a dead proxy's timeout) runs past what
  // a second pass would need (MIN_PASS_BUDGET_MS). That pass does not start — begun, its probes and writes
  // ran into the function's timeout — and its slots are the next run's, from where this run stopped.

  it('starts no later pass with less than MIN_PASS_BUDGET_MS left, and the next run probes the slots it left', async () => {
    const { d, warnings } = deps(false);
    const clock = new ManualClock(t0);
    const passStarts: number[] = [];
    // The run's first probes hang 17 s (a pass's probes run at once); later ones answer at once.
    const { runs, probes, last } = chainedRuns(
      d,
      clock,
      async (at) => {
        if (!passStarts.includes(at)) passStarts.push(at);
        await Promise.resolve();
        if (at === t0.getTime() && clock.now().getTime() === at) clock.advance(17_000);
      },
      // The budget's timer never fires here: the test drives the clock, and the pass ends with its probes.
      { runBudgetMs: 20_000, timer: () => new Promise(() => {}) },
    );
    await handleProbeTick(runs);
    // One pass: at 17 s, 3 s of the budget were left.
    expect(passStarts).toEqual([t0.getTime()]);
    expect(warnings).toContain(
      'probe run out of budget before its deadline: the slots left wait for their next interval',
    );
    const stoppedAt = last()!.nextWindowStart!;
    // The pass covered the slots up to its own start: the rest, up to the deadline (50 s), are the next run's.
    expect(stoppedAt.getTime()).toBe(sec(0).getTime());
    const leftOver = fleet.filter((p) => isDueInWindow(p.uid, 60_000, stoppedAt, sec(50)));
    expect(leftOver.length).toBeGreaterThan(0);
    clock.set(sec(60));
    await handleProbeTick(runs);
    // Each caught up by the next run's first pass (none of them was probed by this one).
    for (const p of leftOver) expect(probes.get(p.status.ip!)?.[0], p.name).toBe(sec(60).getTime());
  });
});

describe('handleProbeTick: a pass whose read of the health states outlasts its budget', () => {
  // The pass read the due proxies' health states before its budget began: a slow Firestore read there, then
  // the budget's full wait for the decisions, ran the run past the function's timeout (killed unrecorded).
  it('decides nothing, and the run leaves its slots to the next run', async () => {
    const { d, warnings } = deps(false);
    const clock = new ManualClock(t0);
    const timers: Array<{ at: number; fire: () => void }> = [];
    const { runs, probes, last } = chainedRuns(d, clock, async () => {}, {
      runBudgetMs: 20_000,
      // The budget's timer, on the test's clock.
      timer: (ms, signal) =>
        new Promise<void>((resolve) => {
          timers.push({ at: clock.now().getTime() + ms, fire: resolve });
          signal.addEventListener('abort', () => resolve());
        }),
    });
    let slow = true;
    runs.health = {
      ...runs.health,
      getMany: async (names) => {
        if (slow) {
          clock.advance(30_000); // a read taking 30 s: the timers due meanwhile fire
          for (const t of timers) if (t.at <= clock.now().getTime()) t.fire();
          await new Promise((r) => setImmediate(r));
        }
        return d.health.getMany(names);
      },
    };
    await handleProbeTick(runs);
    expect(probes.size).toBe(0);
    expect(warnings).toContain(
      'probe pass out of time reading the health states: its proxies are left to the next run',
    );
    expect(warnings).toContain(
      'probe run out of budget before its deadline: the slots left wait for their next interval',
    );
    // Where the pass's window started (the deadline of the run before: -60 s + the 50 s loop).
    const leftFrom = last()!.nextWindowStart!;
    expect(leftFrom).toEqual(sec(-10));
    const leftOver = fleet.filter((p) => isDueInWindow(p.uid, 60_000, leftFrom, sec(0)));
    expect(leftOver.length).toBeGreaterThan(0);
    slow = false;
    clock.set(sec(60));
    await handleProbeTick(runs);
    for (const p of leftOver) expect(probes.get(p.status.ip!)?.[0], p.name).toBe(sec(60).getTime());
  });
});

describe('handleProbeTick: pruning the state of proxies gone', () => {
  it('never deletes a state an overlapping run wrote for a proxy created after this run listed the fleet', async () => {
    // Run A listed the fleet before proxy `late` was created; while A still probes (a slow last pass),
    // the next tick's run B lists `late`, probes it and stores its state. A's prune must leave it alone.
    const { d } = deps(false);
    const stored = new Set<string>(['gone']);
    const deleted: string[] = [];
    const old = aProxy({
      name: 'old',
      spec: managedSpec({ healthCheck: { intervalSeconds: 1 } }),
      status: { ip: '10.0.0.1', providerId: 'zones/z/instances/old' },
    });
    const summary = await handleProbeTick({
      ...d,
      proxies: fixedFleet([old]),
      health: {
        ...d.health,
        listNames: async () => [...stored],
        deleteMany: async (names) => {
          for (const n of names) {
            deleted.push(n);
            stored.delete(n);
          }
        },
      },
      prober: {
        probe: async () => ({}) as never,
        direct: echoUp,
        handshake: async () => {
          stored.add('late'); // run B's write, meanwhile
          return { ok: true, latencyMs: 5, status: 200, body: null, failure: null };
        },
      },
    });
    expect(summary?.probed).toBe(1);
    expect(deleted).toEqual(['gone']);
    expect(stored.has('late')).toBe(true);
  });

  it('logs the documents that do not fit the model, probes none of them, and keeps their health state', async () => {
    const { d, warnings } = deps(false);
    const deleted: string[] = [];
    const summary = await handleProbeTick({
      ...d,
      proxies: {
        watchAll: async () =>
          fixedView({
            proxies: [],
            skipped: [
              { name: 'broken', issues: [{ path: 'spec.port', code: 'invalid_type', message: 'x' }] },
            ],
          }),
      },
      health: {
        ...d.health,
        listNames: async () => ['broken', 'gone'],
        deleteMany: async (names) => void deleted.push(...names),
      },
    });
    expect(summary?.probed).toBe(0);
    expect(deleted).toEqual(['gone']);
    expect(warnings).toContain('proxy documents that do not fit the model were skipped');
  });

  it('logs more than 20 such documents as their count and the first 20, truncated', async () => {
    const { d } = deps(false);
    const lines: Array<Record<string, unknown>> = [];
    const skipped = Array.from({ length: 25 }, (_, i) => ({
      name: `broken-${i}`,
      issues: [{ path: 'spec.port', code: 'invalid_type', message: 'x' }],
    }));
    await handleProbeTick({
      ...d,
      proxies: { watchAll: async () => fixedView({ proxies: [], skipped }) },
      log: { ...d.log, warn: (message, fields) => void lines.push({ message, ...fields }) },
    });
    expect(lines.filter((l) => l.event === 'probe.invalid_documents_skipped')).toEqual([
      {
        message: 'proxy documents that do not fit the model were skipped',
        event: 'probe.invalid_documents_skipped',
        count: 25,
        proxies: skipped.slice(0, 20).map((s) => ({ name: s.name, fields: ['spec.port'] })),
        truncated: true,
      },
    ]);
  });
});

describe('handleProbeTick: the run budget', () => {
  it("gives each pass what is left of the run's budget, at least MIN_PASS_BUDGET_MS", async () => {
    const { d } = deps(false);
    const clock = d.clock as ManualClock;
    const p = aProxy({ name: 'p', status: { ip: '10.0.0.1', providerId: 'zones/z/instances/p' } });
    d.proxies = fixedFleet([p]);
    d.prober = {
      direct: echoUp,
      handshake: async () => ({ ok: true, latencyMs: 1, status: 200, body: null, failure: null }),
      probe: async () => ({ ok: true, latencyMs: 1, status: 200, body: null, failure: null }),
    };
    const budgets: number[] = [];
    d.timer = async (ms) => void budgets.push(ms);
    d.runBudgetMs = 110_000;
    const slowFeed = async () => {
      clock.advance(30_000);
      return [];
    };
    d.passive = { ...d.passive, outcomes: { between: slowFeed } };
    await handleProbeTick(d); // the passive pass took 30 s of the run
    d.runBudgetMs = 20_000;
    clock.advance(120_000);
    await handleProbeTick(d); // past the budget before the pass: the minimum
    expect(budgets).toEqual([80_000, MIN_PASS_BUDGET_MS]);
  });
});

// A Firestore brownout: the client retries the claim's transaction and the record's write for minutes.
// Unbounded, a tick waited on its claim until the function's timeout (120 s) killed it: nothing recorded,
// no job.tick_failed line (the failing_jobs alert never counted it), an instance held the whole time.
describe('handleProbeTick when Firestore does not answer its run record', () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const timeoutMs = 120_000;
  const probeTick = tickEvent(ProbeJob);
  const never = () => new Promise<never>(() => {});

  it('a claim that never answers fails the tick at CLAIM_TIMEOUT_MS, logged once as job.tick_failed', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const log = memoryLogger();
    const { d } = deps(false);
    const probe: ProbeHandlerDeps = { ...d, log, timeoutMs, jobs: { ...d.jobs, claim: never } };
    let outcome: unknown;
    void onProbeEvent(probe, log, probeTick).then(
      () => (outcome = 'resolved'),
      (err: unknown) => (outcome = err),
    );
    await vi.advanceTimersByTimeAsync(CLAIM_TIMEOUT_MS - 1);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toContain('claim gave no answer');
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([
      expect.objectContaining({ severity: 'ERROR', job: ProbeJob, error: (outcome as Error).message }),
    ]);
  });

  it('a record that never answers is given up RECORD_MARGIN_MS before the timeout: the tick ends inside it', async () => {
    // The clock follows the fake timers: the record's bound is measured on it when the record is sent.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: t0 });
    const log = memoryLogger();
    const { d } = deps(false);
    const startedAt = t0.getTime();
    // The run's pass takes 3 s, then its record hangs.
    let records = 0;
    const probe: ProbeHandlerDeps = {
      ...d,
      log,
      timeoutMs,
      clock: { now: () => new Date() },
      routing: { get: () => new Promise((resolve) => setTimeout(() => resolve(null), 3_000)) },
      jobs: {
        ...d.jobs,
        finish: () => {
          records++;
          return never();
        },
      },
    };
    let outcome: unknown;
    void onProbeEvent(probe, log, probeTick).then(
      () => (outcome = 'resolved'),
      (err: unknown) => (outcome = err),
    );
    const end = startedAt + timeoutMs - RECORD_MARGIN_MS;
    await vi.advanceTimersByTimeAsync(end - startedAt - 1);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toContain('record gave no answer');
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([
      expect.objectContaining({ job: ProbeJob, error: (outcome as Error).message }),
    ]);
    // Not tried again as a failed run's record, with nothing of the invocation left.
    expect(records).toBe(1);
  });
});

describe('handleProbeTick: a failed run whose record fails too', () => {
  // Likely when Firestore is the trouble: the record's error escaped instead of the run's, so the failed
  // tick named the record write and the real cause was never logged.
  it("throws and logs the run's error; the record's failure is a WARNING", async () => {
    const log = memoryLogger();
    const { d } = deps(false);
    const probe: ProbeHandlerDeps = {
      ...d,
      log,
      routing: { get: async () => Promise.reject(new TypeError('E1: the run failed')) },
      jobs: { ...d.jobs, finish: async () => Promise.reject(new Error('E2: the record failed')) },
    };
    await expect(
      onProbeEvent(probe, log, {
        specversion: '1.0',
        id: '12',
        type: 'google.cloud.pubsub.topic.v1.messagePublished',
        source: '//pubsub.googleapis.com/projects/demo/topics/ticks-probe',
        data: { message: { data: Buffer.from(JSON.stringify({ job: ProbeJob })).toString('base64') } },
      }),
    ).rejects.toThrow('E1: the run failed');
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([
      expect.objectContaining({ severity: 'ERROR', job: ProbeJob, error: 'E1: the run failed' }),
    ]);
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'WARNING',
        message: 'probe run not recorded',
        error: 'E2: the record failed',
        run: 'E1: the run failed',
      }),
    );
  });
});
