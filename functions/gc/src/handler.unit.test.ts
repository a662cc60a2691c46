import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { instanceNameFromUid } from '../../../shared/src/domain/instance-name.js';
import { ManualClock, systemClock } from '../../../shared/src/ports/clock.js';
import type { JobRun, JobRunStore } from '../../../shared/src/ports/job-runs.js';
import {
  type DeleteOutcome,
  LISTING_STOPPED,
  type ListOptions,
  type OwnedInstance,
  type OwnedInstanceList,
  type Provider,
  ProviderError,
} from '../../../shared/src/ports/provider.js';
import { StoreError } from '../../../shared/src/ports/proxy-store.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { aProxy, externalSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { uidFor as U } from '../../../shared/src/testing/uid-for.js';
import {
  GC_LIST_BUDGET_MS,
  GC_RUN_DEADLINE_MS,
  GC_TIMEOUT_MS,
  type GcDeps,
  GcJob,
  handleGcTick,
  onGcEvent,
} from './handler.js';

const T0 = new Date('2026-01-01T12:00:00Z');
const minutesAgo = (m: number) => new Date(T0.getTime() - m * 60_000);

class MemoryJobRuns implements JobRunStore {
  runs = new Map<string, JobRun>();
  async get(job: string) {
    return this.runs.get(job) ?? null;
  }
  async claim(job: string, now: Date, minGapMs: number) {
    const previous = this.runs.get(job) ?? null;
    if (previous && now.getTime() - previous.startedAt.getTime() < minGapMs) return null;
    this.runs.set(job, { job, startedAt: now, finishedAt: null, ok: null, counts: {}, error: null });
    return { previous };
  }
  async finish(job: string, run: Pick<JobRun, 'finishedAt' | 'ok' | 'counts' | 'error'>) {
    this.runs.set(job, { ...this.runs.get(job)!, ...run });
  }
  async list() {
    return [...this.runs.values()];
  }
}

class FakeProvider implements Provider {
  deleted: string[] = [];
  listCalls = 0;
  failList: unknown = null;
  failDelete = new Set<string>();
  unreachable: string[] = [];
  constructor(
    readonly name: string,
    public instances: OwnedInstance[],
  ) {}
  async create(): Promise<{ providerId: string }> {
    throw new Error('the GC never creates');
  }
  async get(): Promise<null> {
    throw new Error('the GC never gets');
  }
  /** Instances still being created: their delete is refused for now (GCE's resourceNotReady). */
  creating = new Set<string>();
  async delete(providerId: string): Promise<DeleteOutcome> {
    if (this.failDelete.has(providerId)) throw new ProviderError('transient', `503 on ${providerId}`);
    if (this.creating.has(providerId)) return 'not-ready';
    this.deleted.push(providerId);
    return 'deleting';
  }
  async listByTag(_options?: ListOptions): Promise<OwnedInstanceList> {
    this.listCalls++;
    if (this.failList) throw this.failList;
    return { instances: this.instances, unreachable: this.unreachable };
  }
}

/** The providerId of the instance `vm` last made under a test name. */
const providerIds = new Map<string, string>();
const pid = (name: string): string => {
  const id = providerIds.get(name);
  if (id === undefined) throw new Error(`no vm named ${name}`);
  return id;
};
/**
 * An instance as reconcile makes it: labelled with its proxy's uid (`uid`, a UUID or a short name standing
 * for one; '' for no label) and named for it — the GC deletes no other. `name` is the test's name for it.
 */
const vm = (name: string, uid: string, createdAt: Date | null): OwnedInstance => {
  const label = uid === '' ? '' : U(uid);
  const providerId = `zones/us-central1-a/instances/${label === '' ? name : instanceNameFromUid(label)}`;
  providerIds.set(name, providerId);
  return {
    providerId,
    uid: label,
    proxyName: null,
    createdAt,
    state: 'Running',
    ip: '10.0.0.1',
    specHash: null,
  };
};

const failedTicks = (log: ReturnType<typeof memoryLogger>) =>
  log.lines.filter((l) => l.event === 'job.tick_failed');

/** A deferred sweep: no gc.refused, one WARNING gc.deferred (with `fields`), its run and its tick failed. */
function expectDeferred(
  log: ReturnType<typeof memoryLogger>,
  jobs: MemoryJobRuns,
  fields: Record<string, unknown>,
) {
  expect(log.lines.filter((l) => l.event === 'gc.refused')).toEqual([]);
  expect(log.lines.filter((l) => l.event === 'gc.deferred')).toEqual([
    expect.objectContaining({ severity: 'WARNING', ...fields }),
  ]);
  expect(jobs.runs.get(GcJob)).toMatchObject({ ok: false, error: expect.stringMatching(/^deferred: /) });
  // The tick fails (for what was missed): the failing-jobs alert counts this line, and nothing else pages.
  expect(failedTicks(log)).toEqual([
    expect.objectContaining({ severity: 'ERROR', job: GcJob, error: expect.stringMatching(/^deferred: /) }),
  ]);
}

async function setup(providers: FakeProvider[], over: Partial<GcDeps> = {}) {
  const store = new InMemoryProxyStore();
  const live = aProxy({ name: 'live' });
  const deleting = aProxy({ name: 'deleting', deletionRequestedAt: minutesAgo(1) });
  await store.create(live);
  await store.create(deleting);
  const log = memoryLogger();
  const jobs = new MemoryJobRuns();
  const deps: GcDeps = {
    proxies: store,
    providers: new Map(providers.map((p) => [p.name, p])),
    jobs,
    clock: new ManualClock(T0),
    log,
    minAgeMs: 10 * 60_000,
    minRunGapMs: 15_000,
    maxDeletions: 100,
    ...over,
  };
  return { deps, log, jobs, live, deleting, store };
}

describe('handleGcTick (seed §8)', () => {
  it('deletes only old labelled instances whose uid matches no proxy, and logs each deletion loudly', async () => {
    const gce = new FakeProvider('gce', []);
    const { deps, log, jobs, live, deleting } = await setup([gce]);
    gce.instances = [
      vm('orphan', 'gone-uid', minutesAgo(30)),
      vm('young-orphan', 'gone-too', minutesAgo(2)),
      vm('live', live.uid, minutesAgo(60)),
      vm('deleting', deleting.uid, minutesAgo(60)),
      vm('unlabelled', '', minutesAgo(60)),
      vm('ageless', 'gone-uid-2', null),
    ];
    const outcome = await handleGcTick(deps);
    expect(gce.deleted).toEqual([pid('orphan')]);
    expect(outcome).toEqual({
      kind: 'swept',
      counts: {
        instancesDeleted: 1,
        instancesKept: 5,
        instancesDeferred: 0,
        deleteFailures: 0,
        providersFailed: 0,
        zonesUnreachable: 0,
      },
    });
    const loud = log.lines.filter((l) => l.message === 'gc deleted an orphaned instance');
    expect(loud).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        event: 'gc.deleted',
        provider: 'gce',
        zone: 'us-central1-a',
        providerId: pid('orphan'),
        uid: U('gone-uid'),
        ageSeconds: 1800,
      }),
    ]);
    // Every field terraform/monitoring.tf reads from the line (shared/src/testing/log-contract.ts).
    expect(loud.map(missingContractFields)).toEqual([[]]);
    expect(jobs.runs.get(GcJob)).toMatchObject({ ok: true, error: null, counts: { instancesDeleted: 1 } });
  });

  it.each([
    ['unavailable', new StoreError('unavailable', 'Firestore code 14')],
    ['a document without a uid', new StoreError('invalid', 'document proxies/x has no uid')],
  ])('skips the whole sweep when the live set cannot be read (%s)', async (_n, failure) => {
    const gce = new FakeProvider('gce', [vm('orphan', 'gone-uid', minutesAgo(30))]);
    const { deps, log, jobs, store } = await setup([gce]);
    store.liveUids = async () => {
      throw failure;
    };
    expect(await handleGcTick(deps)).toEqual({ kind: 'skipped', reason: 'live_set_unreadable' });
    expect(gce.listCalls).toBe(0);
    expect(gce.deleted).toEqual([]);
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'gc sweep skipped: the live proxy list could not be read (never guess)',
      }),
    );
    expect(jobs.runs.get(GcJob)).toMatchObject({ ok: false, error: expect.stringContaining('live set') });
  });

  // A uid edited by hand in the console: reconcile goes on reading the instance the status records (and it
  // serves, leased), but its label names the old uid, which no document holds any more.
  it('keeps an instance whose label names no live uid when a document records it in its status', async () => {
    const gce = new FakeProvider('gce', []);
    const { deps, log, store } = await setup([gce]);
    gce.instances = [vm('pp-serving', 'uid-before-the-edit', minutesAgo(60))];
    const edited = aProxy({ name: 'edited', status: { providerId: pid('pp-serving'), ip: '10.0.0.9' } });
    await store.create(edited);
    const outcome = await handleGcTick(deps);
    expect(gce.deleted).toEqual([]);
    expect(outcome).toMatchObject({ kind: 'swept', counts: { instancesDeleted: 0, instancesKept: 1 } });
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        message: 'gc: an instance labelled for no live proxy is recorded by one; kept (its uid was edited?)',
        providerId: pid('pp-serving'),
      }),
    );
  });

  it('keeps an orphan when it cannot tell whether a document records it (never guess)', async () => {
    const gce = new FakeProvider('gce', [vm('orphan', 'gone-uid', minutesAgo(30))]);
    const { deps, log, store } = await setup([gce]);
    store.recordsInstance = async () => {
      throw new StoreError('unavailable', 'Firestore code 14');
    };
    const outcome = await handleGcTick(deps);
    expect(gce.deleted).toEqual([]);
    expect(outcome).toMatchObject({
      kind: 'swept',
      counts: { instancesDeleted: 0, instancesDeferred: 0, deleteFailures: 1 },
    });
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message:
          'gc could not tell whether a proxy records an orphaned instance; kept, the next sweep asks again',
      }),
    );
    // A failed tick: a lookup that keeps failing keeps every orphan, and pages through failing_jobs.
    expect(log.lines).toContainEqual(expect.objectContaining({ event: 'job.tick_failed', job: GcJob }));
  });

  it('logs a provider whose listing fails and sweeps the next one', async () => {
    const broken = new FakeProvider('aaa-broken', [vm('x', 'gone-x', minutesAgo(30))]);
    broken.failList = new ProviderError('transient', 'aggregatedList 503');
    const gce = new FakeProvider('gce', [vm('orphan', 'gone-uid', minutesAgo(30))]);
    const { deps, log, jobs } = await setup([broken, gce]);
    const outcome = await handleGcTick(deps);
    expect(gce.deleted).toEqual([pid('orphan')]);
    expect(outcome).toMatchObject({ kind: 'swept', counts: { providersFailed: 1, instancesDeleted: 1 } });
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'gc could not list instances; sweeping the next provider',
        provider: 'aaa-broken',
      }),
    );
    expect(jobs.runs.get(GcJob)).toMatchObject({ ok: false, counts: { providersFailed: 1 } });
  });

  it('goes on after a failed delete and counts it', async () => {
    const gce = new FakeProvider('gce', [
      vm('a', 'gone-a', minutesAgo(30)),
      vm('b', 'gone-b', minutesAgo(30)),
    ]);
    gce.failDelete.add(pid('a'));
    const { deps, live, deleting } = await setup([gce]);
    gce.instances.push(vm('live', live.uid, minutesAgo(60)), vm('deleting', deleting.uid, minutesAgo(60)));
    const outcome = await handleGcTick(deps);
    expect(gce.deleted).toEqual([pid('b')]);
    expect(outcome).toMatchObject({ counts: { instancesDeleted: 1, deleteFailures: 1 } });
  });

  it('does nothing for a duplicate delivery of the same tick', async () => {
    const gce = new FakeProvider('gce', [vm('orphan', 'gone-uid', minutesAgo(30))]);
    const { deps } = await setup([gce]);
    await handleGcTick(deps);
    expect(await handleGcTick(deps)).toEqual({ kind: 'duplicate' });
    expect(gce.listCalls).toBe(1);
  });

  it('skips the sweep when the run cannot be claimed', async () => {
    const gce = new FakeProvider('gce', [vm('orphan', 'gone-uid', minutesAgo(30))]);
    const { deps, jobs } = await setup([gce]);
    jobs.claim = async () => {
      throw new Error('Firestore unavailable');
    };
    expect(await handleGcTick(deps)).toEqual({ kind: 'skipped', reason: 'claim_failed' });
    expect(gce.listCalls).toBe(0);
  });

  // A budget that only capped each sweep deleted the next batch of live VMs at the next sweep, when the live
  // set was readable but wrong (another project's database, a restored one, a collection emptied by hand).
  it('deletes none of them when more orphans than the budget turn up at once, across providers, every sweep', async () => {
    const many = (p: string, n: number) =>
      Array.from({ length: n }, (_, i) => vm(`${p}${i}`, `g-${p}${i}`, minutesAgo(30)));
    const a = new FakeProvider('a', many('a', 2));
    const b = new FakeProvider('b', many('b', 1));
    const { deps, log, jobs, live, deleting } = await setup([a, b], { maxDeletions: 2 });
    a.instances.push(vm('live', live.uid, minutesAgo(60)), vm('deleting', deleting.uid, minutesAgo(60)));
    b.instances.push(vm('live-b', live.uid, minutesAgo(60)));
    for (let sweep = 0; sweep < 2; sweep++) {
      (deps.clock as ManualClock).advance(10 * 60_000);
      const outcome = await handleGcTick(deps);
      expect([...a.deleted, ...b.deleted]).toEqual([]);
      expect(outcome).toMatchObject({ counts: { instancesDeleted: 0, instancesDeferred: 3 } });
    }
    expect(log.lines.filter((l) => l.event === 'gc.refused')).toEqual([
      expect.objectContaining({
        severity: 'ERROR',
        reason: '3 orphans at once, more than GC_MAX_DELETIONS_PER_SWEEP (2)',
        orphans: 3,
        first: expect.arrayContaining([expect.objectContaining({ providerId: pid('b0') })]),
      }),
      expect.objectContaining({ event: 'gc.refused' }),
    ]);
    expect(failedTicks(log)).toHaveLength(2);
    expect(jobs.runs.get(GcJob)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^refused: 3 orphans/),
    });
    // Raised for one sweep, once someone has looked: deleted.
    deps.maxDeletions = 3;
    (deps.clock as ManualClock).advance(10 * 60_000);
    expect(await handleGcTick(deps)).toMatchObject({ counts: { instancesDeleted: 3, instancesDeferred: 0 } });
  });

  it('deletes none when orphans outnumber the live proxies’ instances; one orphan alone is a crash’s', async () => {
    const gce = new FakeProvider('gce', []);
    const { deps, log, live } = await setup([gce]);
    // Two orphans against one live instance: a live set that does not know most of the fleet.
    gce.instances = [
      vm('o1', 'gone-1', minutesAgo(30)),
      vm('o2', 'gone-2', minutesAgo(30)),
      vm('live', live.uid, minutesAgo(60)),
    ];
    expect(await handleGcTick(deps)).toMatchObject({ counts: { instancesDeleted: 0, instancesDeferred: 2 } });
    expect(log.lines.filter((l) => l.event === 'gc.refused')).toEqual([
      expect.objectContaining({
        reason:
          '2 orphans against 1 instances of live proxies seen, of 2 live proxies: the live set may be wrong',
      }),
    ]);
    // The sole proxy deleted after a crash: its instance is the only one, and goes.
    gce.instances = [vm('o1', 'gone-1', minutesAgo(40))];
    (deps.clock as ManualClock).advance(10 * 60_000);
    expect(await handleGcTick(deps)).toMatchObject({ counts: { instancesDeleted: 1 } });
    expect(gce.deleted).toEqual([pid('o1')]);
  });

  // Compute slow: each delete takes a minute of retries. A sweep the function's timeout cut off recorded
  // nothing and logged no failure; now it begins no orphan with too little time left before its deadline.
  it('begins no orphan with too little time left: the rest wait for the next sweep, and the tick fails', async () => {
    const gce = new FakeProvider('gce', [
      vm('a', 'gone-a', minutesAgo(30)),
      vm('b', 'gone-b', minutesAgo(30)),
    ]);
    const { deps, log, jobs, live, deleting } = await setup([gce], { runDeadlineMs: 65_000 });
    // The live proxies' instances beside them: not a sweep refused for too many orphans at once.
    gce.instances.push(vm('live', live.uid, minutesAgo(60)), vm('deleting', deleting.uid, minutesAgo(60)));
    const clock = deps.clock as ManualClock;
    const del = gce.delete.bind(gce);
    gce.delete = async (id) => {
      clock.advance(60_000);
      return del(id);
    };
    const outcome = await handleGcTick(deps);
    // The first begun at once; at 60 s, 5 s are left: not enough to begin another.
    expect(gce.deleted).toEqual([pid('a')]);
    expect(outcome).toMatchObject({
      counts: { instancesDeleted: 1, instancesDeferred: 1, deleteFailures: 0 },
    });
    expect(jobs.runs.get(GcJob)).toMatchObject({
      ok: false,
      error: expect.stringContaining('1 not attempted: out of time'),
    });
    expect(log.lines).toContainEqual(expect.objectContaining({ event: 'job.tick_failed', job: GcJob }));
  });

  // At the deployed deadlines, on fake timers: calls that never answer, the clock run to the timeout.
  describe('on fake timers', () => {
    beforeEach(() => {
      vi.useFakeTimers({ now: T0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    });
    afterEach(() => {
      vi.useRealTimers();
    });
    // The deployed deadlines on the system clock (which the fake timers drive).
    const atDeployedDeadlines = (gce: FakeProvider) =>
      setup([gce], {
        clock: systemClock,
        runDeadlineMs: GC_RUN_DEADLINE_MS,
        listBudgetMs: GC_LIST_BUDGET_MS,
        timeoutMs: GC_TIMEOUT_MS,
      });

    // A Compute API that takes a delete and never answers: the sweep gives the orphan up at its deadline and
    // records the run, instead of waiting into the function's timeout (recording nothing, logging no failure).
    it("gives up an orphan's delete at the deadline: the run is recorded inside the timeout, and the tick fails", async () => {
      const gce = new FakeProvider('gce', [
        vm('a', 'gone-a', minutesAgo(30)),
        vm('b', 'gone-b', minutesAgo(30)),
      ]);
      const { deps, log, jobs, live, deleting } = await atDeployedDeadlines(gce);
      gce.instances.push(vm('live', live.uid, minutesAgo(60)), vm('deleting', deleting.uid, minutesAgo(60)));
      gce.delete = () => new Promise(() => {}); // taken, never answered
      const sweep = handleGcTick(deps);
      await vi.advanceTimersByTimeAsync(GC_RUN_DEADLINE_MS);
      expect(await sweep).toMatchObject({
        counts: { instancesDeleted: 0, deleteFailures: 1, instancesDeferred: 1 },
      });
      const run = jobs.runs.get(GcJob)!;
      expect(run).toMatchObject({
        ok: false,
        error: expect.stringContaining('1 not attempted: out of time'),
      });
      expect(run.finishedAt!.getTime() - T0.getTime()).toBeLessThan(GC_TIMEOUT_MS);
      expect(log.lines).toContainEqual(
        expect.objectContaining({
          severity: 'ERROR',
          message: 'gc could not delete an orphaned instance; the next sweep retries',
          providerId: pid('a'),
        }),
      );
      expect(failedTicks(log)).toHaveLength(1);
    });

    // Firestore degraded: the orphan's lookup is given up at the deadline, and then the run's record (a
    // Firestore write, up to a minute of the client's retries) never answers either. Unbounded, the timeout
    // cut the sweep off: nothing recorded, and no job.tick_failed logged, so nothing paged.
    it("gives up the run's record before the timeout; the tick failure is logged before the record is asked for", async () => {
      const gce = new FakeProvider('gce', [vm('a', 'gone-a', minutesAgo(30))]);
      const { deps, log, jobs, store } = await atDeployedDeadlines(gce);
      store.recordsInstance = () => new Promise(() => {}); // never answered
      // The failure must be logged before the record is asked for: a record that never answers (or one the
      // timeout cuts off) cannot lose it then. What was logged when the record began is kept to check it.
      const loggedWhenRecording: number[] = [];
      jobs.finish = () => {
        loggedWhenRecording.push(failedTicks(log).length);
        return new Promise(() => {}); // never answered
      };
      let settled = false;
      const sweep = handleGcTick(deps).finally(() => {
        settled = true;
      });
      await vi.advanceTimersByTimeAsync(GC_TIMEOUT_MS - 1);
      expect(settled).toBe(true);
      expect(await sweep).toMatchObject({ counts: { instancesDeleted: 0, deleteFailures: 1 } });
      expect(loggedWhenRecording).toEqual([1]);
      expect(failedTicks(log)).toEqual([
        expect.objectContaining({
          severity: 'ERROR',
          job: GcJob,
          error: expect.stringContaining('1 orphan(s) failed'),
        }),
      ]);
      expect(log.lines).toContainEqual(
        expect.objectContaining({ severity: 'ERROR', message: 'gc could not record the run' }),
      );
    });

    // Firestore degraded before the sweep began: the claim (a transaction, minutes of the client's retries) or
    // the live set read never answers. Unbounded, the timeout cut the sweep off: nothing recorded, and no
    // job.tick_failed logged, so nothing paged.
    it('gives up a claim that does not answer by the listing budget: the tick failure is logged inside the timeout', async () => {
      const gce = new FakeProvider('gce', [vm('a', 'gone-a', minutesAgo(30))]);
      const { deps, log, jobs } = await atDeployedDeadlines(gce);
      jobs.claim = () => new Promise(() => {}); // never answered
      let settled = false;
      const sweep = handleGcTick(deps).finally(() => {
        settled = true;
      });
      await vi.advanceTimersByTimeAsync(GC_LIST_BUDGET_MS);
      expect(settled).toBe(true);
      expect(await sweep).toEqual({ kind: 'skipped', reason: 'claim_failed' });
      expect(gce.listCalls).toBe(0);
      expect(failedTicks(log)).toEqual([
        expect.objectContaining({
          severity: 'ERROR',
          message: 'gc sweep skipped: the run could not be claimed',
          job: GcJob,
        }),
      ]);
    });

    it('gives up a live set read that does not answer by the listing budget: the run is recorded as failed inside the timeout', async () => {
      const gce = new FakeProvider('gce', [vm('a', 'gone-a', minutesAgo(30))]);
      const { deps, log, jobs, store } = await atDeployedDeadlines(gce);
      store.liveUids = () => new Promise(() => {}); // never answered
      let settled = false;
      const sweep = handleGcTick(deps).finally(() => {
        settled = true;
      });
      await vi.advanceTimersByTimeAsync(GC_LIST_BUDGET_MS);
      expect(settled).toBe(true);
      expect(await sweep).toEqual({ kind: 'skipped', reason: 'live_set_unreadable' });
      expect(gce.listCalls).toBe(0);
      expect(gce.deleted).toEqual([]);
      expect(failedTicks(log)).toEqual([
        expect.objectContaining({
          severity: 'ERROR',
          message: 'gc sweep skipped: the live proxy list could not be read (never guess)',
          job: GcJob,
        }),
      ]);
      expect(jobs.runs.get(GcJob)).toMatchObject({ ok: false });
    });
  });

  // A large fleet's listing under a slow Compute API: each page up to ~2 minutes of retries, up to 100
  // pages. Unbounded, the function's timeout killed the sweep and nothing recorded or logged the failure.
  it('stops a listing still paging past its budget: the provider is unlisted, the tick fails', async () => {
    const gce = new FakeProvider('gce', [vm('a', 'gone-a', minutesAgo(30))]);
    const { deps, log, jobs } = await setup([gce], {
      runDeadlineMs: GC_RUN_DEADLINE_MS,
      listBudgetMs: GC_LIST_BUDGET_MS,
    });
    const clock = deps.clock as ManualClock;
    const stops: boolean[] = [];
    gce.listByTag = async (options) => {
      stops.push(options?.stop?.() ?? false); // before the first page's answer: not spent
      clock.advance(160_000); // the first pages, slowly
      stops.push(options?.stop?.() ?? false); // before the next
      throw new ProviderError('transient', 'aggregatedList stopped after 3 pages: asked to stop', {
        reason: LISTING_STOPPED,
      });
    };
    const outcome = await handleGcTick(deps);
    expect(stops).toEqual([false, true]);
    expect(gce.deleted).toEqual([]);
    expect(outcome).toMatchObject({ counts: { providersFailed: 1, instancesDeleted: 0 } });
    expect(jobs.runs.get(GcJob)).toMatchObject({ ok: false });
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'gc ran out of its budget listing instances; sweeping the next provider',
      }),
    );
    expect(log.lines).toContainEqual(expect.objectContaining({ event: 'job.tick_failed', job: GcJob }));
  });

  // A listing asks to stop only before its later pages: its first, begun with the budget spent already (the
  // claim and the live set read slowly by a degraded Firestore), could run ~2 minutes into the timeout.
  it('begins no listing once its budget is spent: the provider is unlisted, the tick fails', async () => {
    const gce = new FakeProvider('gce', [vm('a', 'gone-a', minutesAgo(30))]);
    const { deps, log, jobs, store } = await setup([gce], {
      runDeadlineMs: GC_RUN_DEADLINE_MS,
      listBudgetMs: GC_LIST_BUDGET_MS,
    });
    const liveUids = store.liveUids.bind(store);
    store.liveUids = async () => {
      (deps.clock as ManualClock).advance(GC_LIST_BUDGET_MS); // read slowly
      return liveUids();
    };
    const outcome = await handleGcTick(deps);
    expect(gce.listCalls).toBe(0);
    expect(outcome).toMatchObject({ counts: { providersFailed: 1, instancesDeleted: 0 } });
    expect(jobs.runs.get(GcJob)).toMatchObject({ ok: false });
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'gc ran out of its budget listing instances; sweeping the next provider',
        provider: 'gce',
      }),
    );
    expect(failedTicks(log)).toHaveLength(1);
  });

  // A slow listing is not a failure: a fleet whose pages take over 40 s swept well, orphans or none.
  it('a slow listing, with no orphan, is a good sweep', async () => {
    const gce = new FakeProvider('gce', []);
    const { deps, jobs, live } = await setup([gce], {
      runDeadlineMs: GC_RUN_DEADLINE_MS,
      listBudgetMs: GC_LIST_BUDGET_MS,
    });
    gce.instances = [vm('live', live.uid, minutesAgo(60))];
    const clock = deps.clock as ManualClock;
    const stops: boolean[] = [];
    const list = gce.listByTag.bind(gce);
    gce.listByTag = async (options) => {
      for (let page = 0; page < 3; page++) {
        if (page > 0) stops.push(options?.stop?.() ?? false);
        clock.advance(45_000);
      }
      return list(options);
    };
    const outcome = await handleGcTick(deps);
    expect(stops).toEqual([false, false]);
    expect(outcome).toMatchObject({ counts: { providersFailed: 0, instancesKept: 1 } });
    expect(jobs.runs.get(GcJob)).toMatchObject({ ok: true });
  });

  // The orphans' time was a fixed 40 s from the sweep's start, the listing's and the live set's read
  // included: a fleet listed in over 40 s put every orphan off to the next sweep, as slow, and they ran
  // and billed for ever. They have what the listing leaves of the timeout.
  it('deletes the orphans a slow listing found, with the deployed budgets', async () => {
    const gce = new FakeProvider('gce', []);
    const { deps, jobs, live } = await setup([gce], {
      runDeadlineMs: GC_RUN_DEADLINE_MS,
      listBudgetMs: GC_LIST_BUDGET_MS,
    });
    gce.instances = [vm('live', live.uid, minutesAgo(60)), vm('orphan', 'gone-uid', minutesAgo(60))];
    const clock = deps.clock as ManualClock;
    const list = gce.listByTag.bind(gce);
    gce.listByTag = async (options) => {
      for (let page = 0; page < 15; page++) {
        if (page > 0 && options?.stop?.())
          throw new ProviderError('transient', 'stopped', { reason: LISTING_STOPPED });
        clock.advance(3_000);
      }
      return list(options);
    };
    const outcome = await handleGcTick(deps);
    expect(gce.deleted).toEqual([pid('orphan')]);
    expect(outcome).toMatchObject({
      counts: { instancesDeleted: 1, instancesDeferred: 0, deleteFailures: 0 },
    });
    expect(jobs.runs.get(GcJob)).toMatchObject({ ok: true });
  });

  it('a real listing error after the budget is spent is not called running out of time', async () => {
    const gce = new FakeProvider('gce', []);
    const { deps, log } = await setup([gce], { listBudgetMs: 1_000 });
    gce.listByTag = async () => {
      (deps.clock as ManualClock).advance(5_000); // past the budget when it fails
      throw new ProviderError('transient', '503 from Compute');
    };
    await handleGcTick(deps);
    expect(log.lines).toContainEqual(
      expect.objectContaining({ message: 'gc could not list instances; sweeping the next provider' }),
    );
  });

  it("checks its time again after an orphan's lookup: a slow one leaves the delete to the next sweep", async () => {
    const gce = new FakeProvider('gce', [vm('a', 'gone-a', minutesAgo(30))]);
    const { deps, store } = await setup([gce], { runDeadlineMs: 50_000 });
    const clock = deps.clock as ManualClock;
    const lookup = store.recordsInstance.bind(store);
    store.recordsInstance = async (id) => {
      clock.advance(45_000);
      return lookup(id);
    };
    expect(await handleGcTick(deps)).toMatchObject({ counts: { instancesDeleted: 0, instancesDeferred: 1 } });
    expect(gce.deleted).toEqual([]);
  });

  // An hour after its creation no insert holds it: an insert stuck, or another operation. Deferred with a
  // warning on every sweep, it ran and billed with nothing paged.
  it('an orphan refusing deletion as not ready an hour after its creation fails the tick', async () => {
    const gce = new FakeProvider('gce', [vm('stuck', 'gone-s', minutesAgo(61))]);
    gce.creating.add(pid('stuck'));
    const { deps, log } = await setup([gce]);
    expect(await handleGcTick(deps)).toMatchObject({ counts: { instancesDeferred: 0, deleteFailures: 1 } });
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'gc: an orphaned instance still refuses deletion as not ready; the next sweep retries',
        providerId: pid('stuck'),
      }),
    );
    expect(log.lines).toContainEqual(expect.objectContaining({ event: 'job.tick_failed', job: GcJob }));
  });

  // GCE refuses a delete while the insert Operation runs (resourceNotReady); the provider says 'not-ready'.
  // Counted as deleted, the orphan would run on unnoticed; the next sweep lists it again and deletes it.
  it('leaves an orphan still being created to the next sweep', async () => {
    const gce = new FakeProvider('gce', [
      vm('creating', 'gone-c', minutesAgo(30)),
      vm('orphan', 'gone-o', minutesAgo(30)),
    ]);
    gce.creating.add(pid('creating'));
    const { deps, log, jobs, live, deleting } = await setup([gce], { maxDeletions: 2 });
    gce.instances.push(vm('live', live.uid, minutesAgo(60)), vm('deleting', deleting.uid, minutesAgo(60)));
    const outcome = await handleGcTick(deps);
    expect(gce.deleted).toEqual([pid('orphan')]);
    expect(outcome).toMatchObject({ counts: { instancesDeleted: 1, instancesDeferred: 1 } });
    expect(jobs.runs.get(GcJob)).toMatchObject({ ok: false, error: expect.stringContaining('1 deferred') });
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        message: 'gc: an orphaned instance is still being created; the next sweep deletes it',
        providerId: pid('creating'),
      }),
    );
    expect(log.lines.filter((l) => l.message === 'gc deleted an orphaned instance')).toHaveLength(1);

    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([]); // the next sweep deletes it
    gce.creating.clear();
    gce.instances = [vm('creating', 'gone-c', minutesAgo(31))];
    (deps.clock as ManualClock).advance(60_000);
    expect(await handleGcTick(deps)).toMatchObject({ counts: { instancesDeleted: 1, instancesDeferred: 0 } });
    expect(gce.deleted).toContain(pid('creating'));
  });

  // An unreachable zone's instances were not seen, so its orphans were not looked at: only part of the
  // work was done, which docs/operations-jobs.md says is ok: false.
  it('reports zones that did not answer and still sweeps what it saw; the run is not ok', async () => {
    const gce = new FakeProvider('gce', [vm('orphan', 'gone-uid', minutesAgo(30))]);
    gce.unreachable = ['europe-west1-b'];
    const { deps, log, jobs } = await setup([gce]);
    const outcome = await handleGcTick(deps);
    expect(outcome).toMatchObject({
      counts: { instancesDeleted: 1, zonesUnreachable: 1, providersFailed: 0 },
    });
    expect(log.lines).toContainEqual(
      expect.objectContaining({ severity: 'WARNING', zones: ['europe-west1-b'] }),
    );
    expect(jobs.runs.get(GcJob)).toMatchObject({
      ok: false,
      error: expect.stringContaining('1 zone(s) unreachable'),
      counts: { instancesDeleted: 1, zonesUnreachable: 1 },
    });
  });

  // A zone that did not answer hid the live proxies' VMs: the orphans the sweep did see outnumbered the live
  // instances it saw, and it refused as if the live set were wrong (ERROR gc.refused, "check Firestore").
  it('defers, not refuses, orphans that outnumber the live instances a listing with unreachable zones saw', async () => {
    const gce = new FakeProvider('gce', [
      vm('o1', 'gone-1', minutesAgo(30)),
      vm('o2', 'gone-2', minutesAgo(30)),
    ]);
    gce.unreachable = ['europe-west1-b'];
    const { deps, log, jobs, store } = await setup([gce]);
    // Three live proxies (with `live` and `deleting`), their VMs all in the zone that did not answer.
    await store.create(aProxy({ name: 'third' }));
    expect(await handleGcTick(deps)).toMatchObject({
      counts: { instancesDeleted: 0, instancesDeferred: 2, zonesUnreachable: 1 },
    });
    expect(gce.deleted).toEqual([]);
    expectDeferred(log, jobs, {
      unseen: ['gce zone europe-west1-b'],
      reason: expect.stringContaining(
        'of 3 live proxies (3 managed with no instance seen), but the listing missed gce zone europe-west1-b',
      ),
      orphans: 2,
    });
    // The zone answers again: the live instances are counted, and the same orphans go.
    gce.unreachable = [];
    (deps.clock as ManualClock).advance(10 * 60_000);
    const live = await store.liveUids();
    gce.instances.push(...[...live.uids].map((uid, i) => vm(`live-${i}`, uid, minutesAgo(60))));
    expect(await handleGcTick(deps)).toMatchObject({ counts: { instancesDeleted: 2, instancesDeferred: 0 } });
    expect(gce.deleted).toEqual([pid('o1'), pid('o2')]);
  });

  it('defers, not refuses, orphans that outnumber the live instances when a provider could not be listed', async () => {
    const gce = new FakeProvider('gce', [
      vm('o1', 'gone-1', minutesAgo(30)),
      vm('o2', 'gone-2', minutesAgo(30)),
    ]);
    // The live proxies' VMs are this provider's, which did not answer its listing.
    const other = new FakeProvider('other', []);
    other.failList = new ProviderError('transient', '503 listing');
    const { deps, log, jobs, store } = await setup([gce, other]);
    await store.create(aProxy({ name: 'third' }));
    expect(await handleGcTick(deps)).toMatchObject({
      counts: { instancesDeleted: 0, instancesDeferred: 2, providersFailed: 1 },
    });
    expect(gce.deleted).toEqual([]);
    expectDeferred(log, jobs, {
      unseen: ['provider other'],
      reason: expect.stringContaining('the listing missed provider other'),
      liveProxies: 3,
      orphans: 2,
    });
  });

  // Five external proxies (never a VM) and the three managed ones' documents deleted by hand (or a restored
  // database without them), while a zone of the project does not answer. Counted as proxies whose VM the
  // listing may have missed, the external ones deferred the sweep: "fix the zone", not "the live set".
  it('refuses, not defers, when the only live proxies with no VM seen are external ones', async () => {
    const gce = new FakeProvider('gce', [
      vm('m1', 'managed-1', minutesAgo(60)),
      vm('m2', 'managed-2', minutesAgo(60)),
      vm('m3', 'managed-3', minutesAgo(60)),
    ]);
    gce.unreachable = ['asia-south2-c'];
    const { deps, log, store } = await setup([gce]);
    for (const name of ['live', 'deleting'])
      await store.deleteDocument(name, (await store.get(name))!.version);
    for (let i = 1; i <= 5; i++) await store.create(aProxy({ name: `ext-${i}`, spec: externalSpec() }));
    expect(await handleGcTick(deps)).toMatchObject({
      counts: { instancesDeleted: 0, instancesDeferred: 3, zonesUnreachable: 1 },
    });
    expect(gce.deleted).toEqual([]);
    expect(log.lines.filter((l) => l.event === 'gc.deferred')).toEqual([]);
    expect(log.lines.filter((l) => l.event === 'gc.refused')).toEqual([
      expect.objectContaining({
        severity: 'ERROR',
        reason: expect.stringMatching(
          /^3 orphans against 0 instances of live proxies seen, of 5 live proxies \(0 managed with no instance seen\): the live set may be wrong/,
        ),
        liveProxies: 5,
      }),
    ]);
  });

  // The function reading an empty (or restored) database, while some zone of the project — one the fleet
  // never uses: the aggregated listing covers them all — does not answer. Deferred, it said "fix the zone"
  // for as long as the zone was down; the zone cannot hold the instance of a live proxy the database lacks.
  it('refuses, not defers, a fleet the live set does not know when the listing missed a zone', async () => {
    const gce = new FakeProvider('gce', [
      vm('f1', 'fleet-1', minutesAgo(60)),
      vm('f2', 'fleet-2', minutesAgo(60)),
      vm('f3', 'fleet-3', minutesAgo(60)),
      vm('f4', 'fleet-4', minutesAgo(60)),
    ]);
    gce.unreachable = ['asia-south2-c'];
    const { deps, log, jobs, store } = await setup([gce]);
    store.liveUids = async () => ({ uids: new Set(), managed: new Set() });
    expect(await handleGcTick(deps)).toMatchObject({
      counts: { instancesDeleted: 0, instancesDeferred: 4, zonesUnreachable: 1 },
    });
    expect(gce.deleted).toEqual([]);
    expect(log.lines.filter((l) => l.event === 'gc.deferred')).toEqual([]);
    expect(log.lines.filter((l) => l.event === 'gc.refused')).toEqual([
      expect.objectContaining({
        severity: 'ERROR',
        reason: expect.stringMatching(
          /^4 orphans against 0 instances of live proxies seen, of 0 live proxies .*the live set may be wrong/,
        ),
        liveProxies: 0,
        orphans: 4,
      }),
    ]);
    expect(jobs.runs.get(GcJob)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^refused: 4 orphans .* of 0 live proxies/),
    });
    expect(failedTicks(log)).toEqual([
      expect.objectContaining({ severity: 'ERROR', job: GcJob, error: expect.stringMatching(/^refused: /) }),
    ]);
  });

  it('measures age from the moment the live set was read', async () => {
    const gce = new FakeProvider('gce', []);
    const { deps, store } = await setup([gce]);
    const clock = deps.clock as ManualClock;
    const inner = store.liveUids.bind(store);
    store.liveUids = async () => {
      const uids = await inner();
      // A proxy created (and its instance) during a very long sweep, after the live set was read.
      clock.advance(60 * 60_000);
      gce.instances = [vm('new', 'created-after-read', minutesAgo(-30))];
      return uids;
    };
    const outcome = await handleGcTick(deps);
    expect(gce.deleted).toEqual([]);
    expect(outcome).toMatchObject({ counts: { instancesKept: 1 } });
  });
});

describe('onGcEvent', () => {
  const tick = {
    specversion: '1.0',
    id: '12',
    type: 'google.cloud.pubsub.topic.v1.messagePublished',
    source: '//pubsub.googleapis.com/projects/demo/topics/ticks-gc',
    data: { message: { data: Buffer.from('{"job":"gc-sweep"}').toString('base64'), messageId: '12' } },
  };

  it('a tick that throws (a bug past every handled failure) logs one structured ERROR line and fails the invocation', async () => {
    const gce = new FakeProvider('gce', []);
    // A provider adapter answering a listing without its instances: the classification throws.
    gce.listByTag = async () => ({ instances: undefined as never, unreachable: [] });
    const { deps, log } = await setup([gce]);
    await expect(onGcEvent(deps, tick)).rejects.toThrow(TypeError);
    expect(log.lines.filter((l) => l.event === 'job.tick_failed')).toEqual([
      expect.objectContaining({ severity: 'ERROR', job: 'gc-sweep', error: expect.any(String) }),
    ]);
    // Taken up before its run: the stopped-job alert counts these lines.
    const ticks = log.lines.filter((l) => l.event === 'job.tick');
    expect(ticks).toEqual([expect.objectContaining({ severity: 'INFO', job: 'gc-sweep' })]);
    expect(missingContractFields(ticks[0]!)).toEqual([]);
  });

  it('a malformed tick is acknowledged and logged, not failed', async () => {
    const { deps, log } = await setup([new FakeProvider('gce', [])]);
    await onGcEvent(deps, { ...tick, data: { message: { data: 'bm9' } } });
    expect(log.lines.map((l) => [l.severity, l.message])).toEqual([['ERROR', 'malformed tick acknowledged']]);
  });
});

describe('a gc sweep that could not do its work is a failed tick (job.tick_failed, which failing_jobs counts)', () => {
  it('when the run cannot be claimed', async () => {
    const { deps, log, jobs } = await setup([new FakeProvider('gce', [])]);
    jobs.claim = async () => {
      throw new Error('14 UNAVAILABLE: Firestore unavailable');
    };
    await handleGcTick(deps);
    expect(failedTicks(log)).toEqual([
      expect.objectContaining({
        severity: 'ERROR',
        message: 'gc sweep skipped: the run could not be claimed',
        job: GcJob,
        error: '14 UNAVAILABLE: Firestore unavailable',
      }),
    ]);
  });

  it('when the live set cannot be read', async () => {
    const { deps, log, store } = await setup([new FakeProvider('gce', [])]);
    store.liveUids = async () => {
      throw new StoreError('unavailable', 'Firestore code 7 PERMISSION_DENIED');
    };
    await handleGcTick(deps);
    expect(failedTicks(log)).toEqual([
      expect.objectContaining({
        severity: 'ERROR',
        message: 'gc sweep skipped: the live proxy list could not be read (never guess)',
        job: GcJob,
        error: 'Firestore code 7 PERMISSION_DENIED',
      }),
    ]);
  });

  it('when a provider cannot be listed (its orphans went unseen); not for an orphan still being created', async () => {
    const broken = new FakeProvider('gce', []);
    broken.failList = new ProviderError('permanent', 'compute.instances.list denied');
    const { deps, log } = await setup([broken]);
    await handleGcTick(deps);
    expect(failedTicks(log)).toEqual([
      expect.objectContaining({
        severity: 'ERROR',
        job: GcJob,
        error: expect.stringContaining('1 provider(s) unlisted'),
      }),
    ]);

    const busy = new FakeProvider('gce', [vm('a', 'gone-a', minutesAgo(30))]);
    busy.creating.add(pid('a'));
    const second = await setup([busy], { maxDeletions: 1 });
    expect(await handleGcTick(second.deps)).toMatchObject({ counts: { instancesDeferred: 1 } });
    expect(failedTicks(second.log)).toEqual([]);
  });
});
