import { beforeEach, describe, expect, it } from 'vitest';
import { healthInstanceKey } from '../../../shared/src/domain/health/instance-key.js';
import { initialHealth, type ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import { emptyTally, type OutcomeTally } from '../../../shared/src/domain/workers/outcomes.js';
import type { HealthWrite } from '../../../shared/src/ports/health-store.js';
import type { PassiveCursor, PassiveFeedStore } from '../../../shared/src/ports/passive-feed.js';
import type { OutcomeBatchRecord } from '../../../shared/src/ports/workers.js';
import { provisionedSince } from '../../../shared/src/testing/healthy-conditions.js';
import { inMemoryHealthStore, memoryWriteFits } from '../../../shared/src/testing/in-memory-health-store.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { aProxy } from '../../../shared/src/testing/proxy-fixtures.js';
import { HEALTH_WRITE_RETRIES } from './health-writes.js';
import { PASSIVE_TEST_SETTINGS } from './passive-fixtures.unit.js';
import { runPassivePass } from './passive-pass.js';
import type { ProbeDeps } from './probe-pass.js';
import { echoUp } from './prober-fixtures.unit.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const at = (sec: number) => new Date(t0.getTime() + sec * 1000);

/** The port's semantics in memory: commit only on top of the cursor version it was decided on, and of
 *  each health state's (in-memory-health-store.ts versions), all or nothing. */
class MemoryFeed implements PassiveFeedStore {
  cur: PassiveCursor | null = null;
  version = 0;
  commits = 0;
  constructor(readonly health: Map<string, ProxyHealthState>) {}
  async cursor() {
    return this.cur;
  }
  async commit(writes: HealthWrite[], next: Omit<PassiveCursor, 'token'>, expected: string | null) {
    if ((this.cur?.token ?? null) !== expected) return 'conflict' as const;
    if (!writes.every((w) => memoryWriteFits(this.health, w))) return 'conflict' as const;
    for (const w of writes) this.health.set(w.state.proxy, { ...w.state });
    this.cur = { ...next, token: String(++this.version) };
    this.commits++;
    return 'committed' as const;
  }
}

function batch(sec: number, proxy: string, tally: Partial<OutcomeTally>): OutcomeBatchRecord {
  return {
    workerId: 'gw-1',
    sessionId: 's',
    sequence: sec,
    receivedAt: at(sec),
    tallies: new Map([[proxy, { ...emptyTally(), ...tally }]]),
  };
}

/** A managed proxy whose instance has run since `since` (Provisioned=True then: its incarnation). */
const running = (name: string, providerId: string, ip: string, since = t0): ProxyResource =>
  aProxy({
    name,
    status: {
      ip,
      providerId,
      conditions: [provisionedSince(since)],
    },
  });
const proxy = running('p1', 'zones/z/instances/pp-a', '10.0.0.2');
const healthy = (): ProxyHealthState => ({
  ...initialHealth('p1', healthInstanceKey(proxy), null, proxy.spec.healthCheck),
  tracks: {
    BASIC: { verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 },
    EGRESS: { verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 },
  },
  verdict: 'AVAILABLE',
});

let health: Map<string, ProxyHealthState>;
let feed: MemoryFeed;
let batches: OutcomeBatchRecord[];
let published: string[];
let deps: ProbeDeps;

beforeEach(() => {
  health = new Map([['p1', healthy()]]);
  feed = new MemoryFeed(health);
  batches = [];
  published = [];
  deps = {
    health: inMemoryHealthStore(health, { readOnly: true }),
    publisher: { publish: async (r) => void published.push(r.proxy) },
    secrets: { access: async () => '' },
    prober: { probe: async () => ({}) as never, handshake: async () => ({}) as never, direct: echoUp },
    log: { info: () => {}, warn: () => {} },
    recorder: { observe: () => {} },
    tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
    concurrency: 1,
    passive: {
      outcomes: {
        between: async (from, to) => batches.filter((b) => b.receivedAt > from && b.receivedAt <= to),
      },
      feed,
      ...PASSIVE_TEST_SETTINGS,
    },
  };
});

describe('runPassivePass', () => {
  it('no batches: nothing read into the reducer and nothing written', async () => {
    const c = await runPassivePass(deps, [proxy], at(60));
    expect(c).toEqual({ outcomeBatches: 0, passiveSignals: 0, written: 0, transitions: 0 });
    expect(feed.commits).toBe(0);
  });

  it('failures flip the proxy at the passive threshold, one signal per tick, each batch counted once', async () => {
    const verdicts = [];
    const sent = new Set<string>();
    for (let tick = 1; tick <= 3; tick++) {
      batches.push(batch(tick * 60 - 30, 'p1', { dial: 4, proxyHandshake: 2, ok: 1 }));
      await runPassivePass(deps, [proxy], at(tick * 60), sent);
      // The same tick delivered again: the window is consumed, nothing more counts.
      await runPassivePass(deps, [proxy], at(tick * 60));
      verdicts.push(health.get('p1')!.verdict);
    }
    expect(verdicts).toEqual(['SUSPECT', 'SUSPECT', 'UNHEALTHY']);
    expect(health.get('p1')!.passive?.track.consecutiveFail).toBe(3);
    expect(feed.commits).toBe(3);
    // Into SUSPECT (reason PassiveSuspect, still Healthy=True), then UNHEALTHY: each once.
    expect(published).toEqual(['p1', 'p1']);
    expect(sent).toEqual(new Set(['p1'])); // the invocation's active passes will not republish it
  });

  it('two concurrent ticks over the same window: one counts it, the other conflicts and writes nothing', async () => {
    batches.push(batch(30, 'p1', { dial: 6 }));
    const [a, b] = await Promise.all([
      runPassivePass(deps, [proxy], at(60)),
      runPassivePass(deps, [proxy], at(60)),
    ]);
    expect([a.outcomeBatches, b.outcomeBatches].sort()).toEqual([0, 1]);
    expect(health.get('p1')!.passive?.track.consecutiveFail).toBe(1);
  });

  it('a batch still settling is left to the next tick, not lost', async () => {
    batches.push(batch(58, 'p1', { dial: 6 }));
    expect((await runPassivePass(deps, [proxy], at(60))).outcomeBatches).toBe(0);
    expect((await runPassivePass(deps, [proxy], at(120))).outcomeBatches).toBe(1);
  });

  it('passing outcomes on an untracked healthy proxy move the cursor but read and write no health state', async () => {
    const read: string[] = [];
    const getMany = deps.health.getMany;
    deps.health.getMany = async (names) => {
      read.push(...names);
      return getMany(names);
    };
    batches.push(batch(30, 'p1', { ok: 20, latencyMsSum: 2000 }));
    const c = await runPassivePass(deps, [proxy], at(60));
    expect(c).toMatchObject({ outcomeBatches: 1, passiveSignals: 1, written: 0 });
    expect(read).toEqual([]);
    expect(health.get('p1')!.passive).toBeNull();
    expect(feed.cur?.tracked).toEqual([]);
  });

  it('a tracked proxy recovers on passing signals and leaves the tracked list', async () => {
    batches.push(batch(30, 'p1', { dial: 6 }));
    await runPassivePass(deps, [proxy], at(60));
    expect(feed.cur?.tracked).toEqual(['p1']);
    batches.push(batch(90, 'p1', { ok: 6 }));
    await runPassivePass(deps, [proxy], at(120));
    expect(health.get('p1')!.passive?.track).toEqual({
      verdict: 'AVAILABLE',
      consecutiveOk: 1,
      consecutiveFail: 0,
    });
    batches.push(batch(150, 'p1', { ok: 6 }));
    await runPassivePass(deps, [proxy], at(180));
    expect(health.get('p1')!.passive).toBeNull();
    expect(feed.cur?.tracked).toEqual([]);
  });

  it('ignores proxies that are gone, have no address, or have no stored health state', async () => {
    const gone = aProxy({ name: 'p2', status: { ip: null } });
    batches.push(batch(10, 'p2', { dial: 9 }), batch(20, 'p3', { dial: 9 }));
    const c = await runPassivePass(deps, [proxy, gone], at(60));
    expect(c).toMatchObject({ outcomeBatches: 2, passiveSignals: 0, written: 0 });
    expect([...health.keys()]).toEqual(['p1']);
  });

  it('leaves a proxy whose deletion was requested alone, stored state and all (seed §6: skip if deleting)', async () => {
    const deleting: ProxyResource = { ...proxy, deletionRequestedAt: at(1) };
    batches.push(batch(30, 'p1', { dial: 6 }));
    const c = await runPassivePass(deps, [deleting], at(60));
    expect(c).toMatchObject({ outcomeBatches: 1, passiveSignals: 0, written: 0 });
    expect(health.get('p1')!.passive).toBeNull();
    expect(published).toEqual([]);
  });

  it('a window changing more proxies than one commit may hold is consumed over several ticks', async () => {
    const names = Array.from({ length: 450 }, (_, i) => `q${String(i).padStart(3, '0')}`);
    const fleet = names.map((n) => running(n, `i-${n}`, '10.0.0.9'));
    for (const p of fleet)
      health.set(p.name, { ...healthy(), proxy: p.name, instance: healthInstanceKey(p) });
    const failed = { ...emptyTally(), dial: 6 };
    // Each worker also passes a quarter of its proxies: not a suspect worker (workers/passive.ts).
    const passed = { ...emptyTally(), ok: 6 };
    const tallies = (from: number, to: number) =>
      new Map([
        ...names.slice(from, to).map((n) => [n, failed] as const),
        ...names.slice(from, from + (to - from) / 3).map((n) => [`ok-${n}`, passed] as const),
      ]);
    batches.push(
      { ...batch(10, 'x', {}), workerId: 'gw-1', tallies: tallies(0, 300) },
      { ...batch(20, 'x', {}), workerId: 'gw-2', tallies: tallies(300, 450) },
    );
    const sizes: number[] = [];
    const commit = feed.commit.bind(feed);
    feed.commit = async (states, next, expected) => {
      sizes.push(states.length);
      return commit(states, next, expected);
    };
    const first = await runPassivePass(deps, fleet, at(60));
    expect(first).toMatchObject({ outcomeBatches: 1, written: 300 });
    expect(feed.cur?.through).toEqual(at(10));
    const second = await runPassivePass(deps, fleet, at(61));
    expect(second).toMatchObject({ outcomeBatches: 1, written: 150 });
    expect(feed.cur?.through).toEqual(at(61 - 5));
    expect(sizes).toEqual([300, 150]);
    expect(names.every((n) => health.get(n)?.verdict === 'SUSPECT')).toBe(true);
  });

  it('a worker failing every proxy it uses spares them and is logged once as passive.worker_suspect', async () => {
    const others = ['p2', 'p3'].map((n) => running(n, `i-${n}`, '10.0.0.3'));
    for (const p of others)
      health.set(p.name, { ...healthy(), proxy: p.name, instance: healthInstanceKey(p) });
    const warned: Array<Record<string, unknown>> = [];
    deps.log = { info: () => {}, warn: (_m, f) => void warned.push(f) };
    const failed = { ...emptyTally(), dial: 6 };
    batches.push({ ...batch(30, 'p1', {}), tallies: new Map(['p1', 'p2', 'p3'].map((n) => [n, failed])) });
    const c = await runPassivePass(deps, [proxy, ...others], at(60));
    expect(c).toMatchObject({ outcomeBatches: 1, passiveSignals: 0, written: 0 });
    expect([...health.values()].every((s) => s.verdict === 'AVAILABLE' && s.passive === null)).toBe(true);
    expect(warned).toEqual([{ event: 'passive.worker_suspect', workerId: 'gw-1', proxies: 3, failing: 3 }]);
    expect(warned.map(missingContractFields)).toEqual([[]]);
    expect(feed.cur?.through).toEqual(at(55));
  });

  it('a proxy whose stored state is of a replaced instance is left to the active pass to reset', async () => {
    // The replacement has the same name (names derive from the UID): only its incarnation differs.
    const replaced = running('p1', 'zones/z/instances/pp-a', '10.0.0.7', at(20));
    const old = healthInstanceKey(proxy);
    health.set('p1', healthy());
    batches.push(batch(30, 'p1', { dial: 9 }));
    const c = await runPassivePass(deps, [replaced], at(60));
    expect(c).toMatchObject({ outcomeBatches: 1, written: 0, transitions: 0 });
    expect(health.get('p1')).toMatchObject({
      instance: old,
      verdict: 'AVAILABLE',
      passive: null,
    });
    expect(feed.cur?.tracked).toEqual([]);
  });

  it('never reads further back than the expiry window (a first run, or after an outage)', async () => {
    batches.push(batch(10, 'p1', { dial: 9 }), batch(3590, 'p1', { dial: 9 }));
    const c = await runPassivePass(deps, [proxy], at(3600));
    expect(c.outcomeBatches).toBe(1);
  });
});

describe('runPassivePass: expiring the evidence of tracked proxies it gets no signal for', () => {
  // An hourly proxy failed by the gateways leaves their snapshots (no more outcomes); its active probe is
  // up to an hour away. Its evidence must expire expiryMs after the last signal, not at that probe.
  const hourly: ProxyResource = {
    ...proxy,
    spec: { ...proxy.spec, healthCheck: { ...proxy.spec.healthCheck, intervalSeconds: 3600 } },
  };
  const other = running('p2', 'zones/z/instances/pp-b', '10.0.0.3');
  let read: string[];
  const failThrice = async () => {
    for (let tick = 1; tick <= 3; tick++) {
      batches.push(batch(tick * 60 - 30, 'p1', { dial: 6 }));
      await runPassivePass(deps, [hourly, other], at(tick * 60));
    }
    expect(health.get('p1')).toMatchObject({ verdict: 'UNHEALTHY', passive: { lastSignalAt: at(180) } });
    published.length = 0;
    read = [];
  };
  beforeEach(() => {
    read = [];
    health.set('p2', { ...healthy(), proxy: 'p2', instance: healthInstanceKey(other) });
    const getMany = deps.health.getMany;
    deps.health.getMany = async (names) => {
      read.push(...names);
      return getMany(names);
    };
  });

  it('drops it once expired while other proxies’ outcomes keep coming, and publishes the flip', async () => {
    await failThrice();
    // Passing outcomes for p2 only (untracked: no read); p1 gets none.
    batches.push(batch(210, 'p2', { ok: 9 }));
    const early = await runPassivePass(deps, [hourly, other], at(240));
    expect(early.written).toBe(0);
    expect(health.get('p1')!.verdict).toBe('UNHEALTHY');
    expect(read).toEqual(['p1']); // the tracked proxy without a signal, nothing else
    batches.push(batch(330, 'p2', { ok: 9 }), batch(360, 'p2', { ok: 9 }));
    const c = await runPassivePass(deps, [hourly, other], at(365));
    expect(c).toMatchObject({ written: 1, transitions: 1 });
    expect(health.get('p1')).toMatchObject({ verdict: 'AVAILABLE', passive: null, transitionAt: at(365) });
    expect(published).toEqual(['p1']);
    expect(feed.cur?.tracked).toEqual([]);
  });

  // A gateway routes to a SUSPECT proxy only when nothing else in the route is usable (routing.ts): here
  // it sends it traffic — and fails — only while the proxy is not SUSPECT. The failures add up across
  // expiries, so the proxy turns UNHEALTHY rather than cycling SUSPECT → AVAILABLE forever.
  it('a proxy the gateways fail at every use, and avoid while SUSPECT, turns UNHEALTHY', async () => {
    const verdicts: string[] = [];
    const published_: number[] = [];
    for (let tick = 1; tick <= 12 && health.get('p1')?.verdict !== 'UNHEALTHY'; tick++) {
      if (health.get('p1')?.passive?.track.verdict !== 'SUSPECT')
        batches.push(batch(tick * 60 - 30, 'p1', { dial: 6 }));
      published.length = 0;
      await runPassivePass(deps, [hourly, other], at(tick * 60));
      verdicts.push(health.get('p1')!.verdict!);
      published_.push(published.length);
      expect(feed.cur?.tracked).toEqual(['p1']); // demoted evidence is still tracked
    }
    expect(verdicts.at(-1)).toBe('UNHEALTHY');
    // One transition published per flip of the verdict, nothing on the ticks between.
    expect(published_).toEqual([1, 0, 0, 1, 1, 0, 0, 1, 1]);
    expect(verdicts).toEqual([
      'SUSPECT',
      'SUSPECT',
      'SUSPECT',
      'AVAILABLE',
      'SUSPECT',
      'SUSPECT',
      'SUSPECT',
      'AVAILABLE',
      'UNHEALTHY',
    ]);
  });

  it('a demoted track left silent is dropped one window later: written, nothing published', async () => {
    batches.push(batch(30, 'p1', { dial: 6 }));
    await runPassivePass(deps, [hourly, other], at(60));
    expect(health.get('p1')).toMatchObject({ verdict: 'SUSPECT' });
    await runPassivePass(deps, [hourly, other], at(240));
    expect(health.get('p1')).toMatchObject({
      verdict: 'AVAILABLE',
      passive: { track: { verdict: 'AVAILABLE', consecutiveFail: 1 } },
    });
    published.length = 0;
    expect(await runPassivePass(deps, [hourly, other], at(360))).toMatchObject({ written: 0 });
    expect(await runPassivePass(deps, [hourly, other], at(420))).toMatchObject({
      written: 1,
      transitions: 0,
    });
    expect(health.get('p1')).toMatchObject({ verdict: 'AVAILABLE', passive: null });
    expect(published).toEqual([]);
    expect(feed.cur?.tracked).toEqual([]);
  });

  it('drops it once expired with no gateway outcomes at all', async () => {
    await failThrice();
    const commits = feed.commits;
    const through = feed.cur?.through;
    expect(await runPassivePass(deps, [hourly, other], at(300))).toMatchObject({ written: 0 });
    expect(feed.commits).toBe(commits); // not expired yet: nothing written
    const c = await runPassivePass(deps, [hourly, other], at(365));
    expect(c).toMatchObject({ outcomeBatches: 0, written: 1, transitions: 1 });
    expect(health.get('p1')).toMatchObject({ verdict: 'AVAILABLE', passive: null });
    expect(published).toEqual(['p1']);
    expect(feed.cur).toMatchObject({ tracked: [], through }); // no batch read: the cursor stays
    // Nothing tracked any more: a quiet fleet reads and writes nothing again.
    read = [];
    await runPassivePass(deps, [hourly, other], at(425));
    expect(read).toEqual([]);
    expect(feed.commits).toBe(commits + 1);
  });

  it('a tracked proxy whose track the active pass dropped already leaves the tracked list', async () => {
    await failThrice();
    health.set('p1', { ...health.get('p1')!, passive: null, verdict: 'AVAILABLE' });
    await runPassivePass(deps, [hourly, other], at(240));
    expect(feed.cur?.tracked).toEqual([]);
    expect(published).toEqual([]);
  });

  it('a tracked proxy replaced since (its state another instance’s) leaves the list: read once, not every tick', async () => {
    await failThrice();
    // The VM replaced: the same name, another incarnation; its state is the active pass's to reset.
    const replaced = { ...running('p1', 'zones/z/instances/pp-a', '10.0.0.7', at(200)), spec: hourly.spec };
    await runPassivePass(deps, [replaced, other], at(240));
    expect(read).toEqual(['p1']);
    expect(feed.cur?.tracked).toEqual([]);
    expect(health.get('p1')).toMatchObject({ verdict: 'UNHEALTHY', instance: healthInstanceKey(hourly) });
    read = [];
    await runPassivePass(deps, [replaced, other], at(300));
    expect(read).toEqual([]);
  });

  it('expiries past one commit’s cap are left for the next tick, not logged as signals lost', async () => {
    const names = Array.from({ length: 405 }, (_, i) => `e${String(i).padStart(3, '0')}`);
    const fleet = names.map((n) => ({ ...running(n, `i-${n}`, '10.0.0.9'), spec: hourly.spec }));
    for (const p of fleet) {
      const stale = {
        track: { verdict: 'UNHEALTHY' as const, consecutiveOk: 0, consecutiveFail: 3 },
        lastSignalAt: at(0),
      };
      health.set(p.name, {
        ...healthy(),
        proxy: p.name,
        instance: healthInstanceKey(p),
        verdict: 'UNHEALTHY',
        passive: stale,
      });
    }
    feed.cur = { through: at(0), tracked: [...names], token: '0' };
    const infos: string[] = [];
    const warned: string[] = [];
    deps.log = { info: (m) => void infos.push(m), warn: (m) => void warned.push(m) };
    const first = await runPassivePass(deps, fleet, at(600));
    expect(first).toMatchObject({ outcomeBatches: 0, written: 400 });
    expect(warned).toEqual([]);
    expect(infos).toContain('passive expiries left for the next tick: more than a commit takes');
    expect(feed.cur?.tracked).toHaveLength(5);
    const second = await runPassivePass(deps, fleet, at(660));
    expect(second).toMatchObject({ written: 5 });
    expect(feed.cur?.tracked).toEqual([]);
    expect(names.every((n) => health.get(n)?.passive === null)).toBe(true);
  });
});

describe('runPassivePass: a proxy written by another pass between this pass’s read and its commit', () => {
  /** What an overlapping invocation's active pass stores meanwhile: a failed probe. */
  const probedMeanwhile = (s: ProxyHealthState): ProxyHealthState => ({
    ...s,
    tracks: { ...s.tracks, BASIC: { verdict: 'AVAILABLE', consecutiveOk: 0, consecutiveFail: 1 } },
  });
  let attempts: number;
  let warned: Array<{ message: string; fields: Record<string, unknown> }>;
  /** Runs `meanwhile` before each commit of the pass (after it read the health states). */
  const interleave = (meanwhile: (attempt: number) => void) => {
    attempts = 0;
    warned = [];
    deps.log = { info: () => {}, warn: (message, fields) => void warned.push({ message, fields }) };
    const commit = MemoryFeed.prototype.commit.bind(feed);
    feed.commit = async (writes, next, expected) => {
      meanwhile(attempts++);
      return commit(writes, next, expected);
    };
  };

  it('reduces the same signal again into the fresh state and commits once: both updates hold', async () => {
    interleave((n) => {
      if (n === 0) health.set('p1', probedMeanwhile(health.get('p1')!));
    });
    batches.push(batch(30, 'p1', { dial: 6 }));
    const c = await runPassivePass(deps, [proxy], at(60));
    expect(c).toMatchObject({ outcomeBatches: 1, written: 1 });
    expect(attempts).toBe(2);
    expect(feed.commits).toBe(1);
    expect(health.get('p1')!.passive?.track.consecutiveFail).toBe(1);
    expect(health.get('p1')!.tracks.BASIC).toMatchObject({ consecutiveFail: 1 });
    expect(feed.cur?.tracked).toEqual(['p1']);
    expect(warned).toEqual([]);
  });

  it('losing every retry: a WARNING, no throw, the cursor unmoved — and the next tick counts the window', async () => {
    interleave(() => health.set('p1', { ...health.get('p1')! }));
    batches.push(batch(30, 'p1', { dial: 6 }));
    const c = await runPassivePass(deps, [proxy], at(60));
    expect(c).toMatchObject({ outcomeBatches: 0, written: 0, transitions: 0 });
    expect(attempts).toBe(1 + HEALTH_WRITE_RETRIES);
    expect(feed.cur).toBeNull();
    expect(health.get('p1')!.passive).toBeNull();
    expect(published).toEqual([]);
    expect(warned).toEqual([
      {
        message: 'passive health writes kept losing to another pass; the window is read again next tick',
        fields: { proxies: ['p1'], attempts: 1 + HEALTH_WRITE_RETRIES },
      },
    ]);
    interleave(() => {});
    expect(await runPassivePass(deps, [proxy], at(61))).toMatchObject({ outcomeBatches: 1, written: 1 });
    expect(health.get('p1')!.passive?.track.consecutiveFail).toBe(1);
  });

  it('when the cursor moved too, the window is the other tick’s: no retry', async () => {
    batches.push(batch(30, 'p1', { dial: 6 }));
    interleave(() => {
      health.set('p1', probedMeanwhile(health.get('p1')!));
      feed.cur = { through: at(55), tracked: [], token: 'other-tick' };
    });
    expect(await runPassivePass(deps, [proxy], at(60))).toMatchObject({ outcomeBatches: 0 });
    expect(attempts).toBe(1);
    expect(health.get('p1')!.passive).toBeNull();
  });
});
