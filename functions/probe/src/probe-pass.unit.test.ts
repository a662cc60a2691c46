import { describe, expect, it } from 'vitest';
import type { ProbeResult, ProbeTarget } from '../../../shared/src/adapters/probe/proxy-probe.js';
import { healthVerdictOf, type ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import type { TrackState } from '../../../shared/src/domain/health/verdict.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import { PublishHolds } from '../../../shared/src/domain/publish-holds.js';
import { PublishError } from '../../../shared/src/ports/publish-error.js';
import { SecretAccessError, type SecretErrorKind } from '../../../shared/src/ports/secrets.js';
import { condition } from '../../../shared/src/testing/healthy-conditions.js';
import { inMemoryHealthStore } from '../../../shared/src/testing/in-memory-health-store.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { aProxy, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { noOutcomes } from './passive-fixtures.unit.js';
import { type PassCounts, type ProbeDeps, pruneHealth, runProbePass } from './probe-pass.js';
import { echoUp, stoppedWithAddress } from './prober-fixtures.unit.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const ECHO = 'http://127.0.0.1:9/v1/echo';

const result = (ok: boolean, body: string | null = null): ProbeResult => ({
  ok,
  latencyMs: 20,
  status: ok ? 200 : null,
  body,
  failure: ok ? null : { stage: 'DIAL', code: 'connect_refused' },
});

/** Proxies whose host is in `down` refuse every connection; the others pass both tiers. */
function fakes(echoUrl: string | null, down: Set<string>) {
  const health = new Map<string, ProxyHealthState>();
  const publisher = new RecordingReconcilePublisher();
  const targets: ProbeTarget[] = [];
  const observed: Array<{ proxy: string; tier: string; ok: boolean }> = [];
  const deps: ProbeDeps = {
    health: inMemoryHealthStore(health),
    publisher,
    secrets: { access: async () => 'user:pass' },
    prober: {
      direct: echoUp,
      handshake: async (target) => {
        targets.push(target);
        return result(!down.has(target.host));
      },
      probe: async (target) => {
        targets.push(target);
        return result(!down.has(target.host), JSON.stringify({ ip: target.host, headers: {} }));
      },
    },
    log: { info: () => {}, warn: () => {} },
    recorder: { observe: (proxy, o) => void observed.push({ proxy, tier: o.tier, ok: o.ok }) },
    tiers: { echoUrl, callerIps: ['192.0.2.1'], rejectUnauthorized: true },
    concurrency: 4,
    passive: noOutcomes(),
  };
  return { deps, health, publisher, targets, observed };
}

const proxy = (name: string, ip: string) =>
  aProxy({ name, status: { ip, providerId: `zones/z/instances/${name}` } });

/** `n` passes, each over one whole interval (every proxy is due once per pass). */
async function passes(deps: ProbeDeps, all: ProxyResource[], n: number) {
  const intervalMs = all[0]!.spec.healthCheck.intervalSeconds * 1000;
  let last: PassCounts | null = null;
  for (let i = 0; i < n; i++) {
    last = await runProbePass(
      deps,
      all,
      new Date(t0.getTime() + i * intervalMs),
      new Date(t0.getTime() + (i + 1) * intervalMs),
    );
  }
  return last;
}

describe('runProbePass: every probe is observed (seed §9), whatever the verdict does', () => {
  it('records each tier of each probe, on every pass, also when nothing is written', async () => {
    const f = fakes(ECHO, new Set(['10.0.0.9']));
    await passes(f.deps, [proxy('up', '10.0.0.1'), proxy('dead', '10.0.0.9')], 3);
    const of = (name: string) => f.observed.filter((o) => o.proxy === name);
    expect(of('up')).toEqual(
      Array.from({ length: 3 }, () => [
        { proxy: 'up', tier: 'BASIC', ok: true },
        { proxy: 'up', tier: 'EGRESS', ok: true },
      ]).flat(),
    );
    // A proxy that fails BASIC is not asked for EGRESS: one failed observation per pass.
    expect(of('dead')).toEqual(
      Array.from({ length: 3 }, () => ({ proxy: 'dead', tier: 'BASIC', ok: false })),
    );
  });
});

describe('runProbePass: which proxies a pass looks at (seed §6: skip if no address or deleting)', () => {
  it('never probes a proxy without an address or one whose deletion was requested: no state, no publish', async () => {
    const f = fakes(ECHO, new Set(['10.0.0.9']));
    const up = proxy('up', '10.0.0.1');
    // Failing, so that a probe of it would store a state and publish its transition at the threshold.
    const deleting: ProxyResource = { ...proxy('deleting', '10.0.0.9'), deletionRequestedAt: t0 };
    const pending = aProxy({ name: 'pending', status: { ip: null } });
    await passes(f.deps, [up, deleting, pending], deleting.spec.healthCheck.failureThreshold + 1);
    expect(new Set(f.targets.map((t) => t.host))).toEqual(new Set(['10.0.0.1']));
    expect(new Set(f.observed.map((o) => o.proxy))).toEqual(new Set(['up']));
    expect([...f.health.keys()]).toEqual(['up']);
    expect(f.publisher.published).toEqual([{ proxy: 'up', reason: 'health-transition' }]);
  });

  it('never dials a managed proxy whose status says its instance is not serving, address or not', async () => {
    // A status written before reconcile cleared addresses of stopped or gone instances: GCE released that
    // address, another project's VM may have it, and a probe would send it the proxy's credentials.
    const f = fakes(ECHO, new Set());
    const serving = (name: string, ip: string) =>
      aProxy({
        name,
        status: {
          ip,
          providerId: `zones/z/instances/${name}`,
          conditions: [condition('Provisioned', 'True', 'Created', t0)],
        },
      });
    await passes(f.deps, [serving('up', '10.0.0.1'), stoppedWithAddress(t0)], 2);
    expect(new Set(f.targets.map((t) => t.host))).toEqual(new Set(['10.0.0.1']));
    expect([...f.health.keys()]).toEqual(['up']);
  });
});

describe('runProbePass: a proxy with no stored state', () => {
  it.each([
    ['with the echo tier', ECHO],
    ['without an echo endpoint', null],
  ])(
    'failing BASIC from its first probe becomes UNHEALTHY at the failure threshold (%s)',
    async (_n, echo) => {
      const f = fakes(echo, new Set(['10.0.0.9']));
      const dead = proxy('dead', '10.0.0.9');
      const threshold = dead.spec.healthCheck.failureThreshold;
      await passes(f.deps, [dead], threshold - 1);
      expect(f.health.get('dead')?.verdict).toBeNull();
      expect(f.publisher.published).toEqual([]);
      await passes(f.deps, [dead], 1);
      expect(f.health.get('dead')?.verdict).toBe('UNHEALTHY');
      expect(healthVerdictOf(f.health.get('dead')!)).toMatchObject({ healthy: false, reason: 'ProbeFailed' });
      expect(f.publisher.published).toEqual([{ proxy: 'dead', reason: 'health-transition' }]);
    },
  );

  it.each([
    ['with the echo tier', ECHO, ['BASIC', 'EGRESS']],
    ['without an echo endpoint: BASIC alone decides', null, ['BASIC']],
  ])('passing its probes becomes AVAILABLE (%s)', async (_n, echo, tracks) => {
    const f = fakes(echo, new Set());
    const up = proxy('up', '10.0.0.2');
    await passes(f.deps, [up], up.spec.healthCheck.successThreshold);
    expect(f.health.get('up')?.verdict).toBe('AVAILABLE');
    expect(Object.keys(f.health.get('up')!.tracks).sort()).toEqual(tracks);
    expect(healthVerdictOf(f.health.get('up')!)).toMatchObject({ healthy: true, reason: 'ProbeSucceeded' });
  });
});

/** A managed proxy whose credentials are the secret `secret`. */
const withSecret = (name: string, ip: string, secret: string) =>
  aProxy({
    name,
    spec: managedSpec({ credentialsRef: { secret } }),
    status: { ip, providerId: `zones/z/instances/${name}` },
  });

/** Secret Manager answering `user:s3cret`, but failing with `kind` for the secret `broken`. */
const failingFor = (broken: string, kind: SecretErrorKind): ProbeDeps['secrets'] => ({
  access: async (ref) => {
    if (ref.secret === broken) throw new SecretAccessError(kind, `projects/p/secrets/${ref.secret}`, kind);
    return 'user:s3cret';
  },
});

describe('runProbePass: a proxy whose credentials secret cannot be read', () => {
  it.each<[string, SecretErrorKind]>([
    ['deleted secret', 'not_found'],
    ['IAM denied', 'permission_denied'],
    ['disabled version', 'failed_precondition'],
  ])('%s: only that proxy is probed without credentials; the others are still written', async (_n, kind) => {
    const f = fakes(ECHO, new Set());
    const warnings: Array<[string, Record<string, unknown>]> = [];
    f.deps.log = { info: () => {}, warn: (m, fields) => void warnings.push([m, fields]) };
    f.deps.secrets = failingFor('broken', kind);
    const all = [
      withSecret('a', '10.0.0.2', 'good'),
      withSecret('b', '10.0.0.3', 'broken'),
      withSecret('c', '10.0.0.4', 'good'),
    ];
    const counts = await passes(f.deps, all, 1);
    expect(counts).toMatchObject({ probed: 3, written: 3 });
    expect([...f.health.keys()].sort()).toEqual(['a', 'b', 'c']);
    const credentialsSent = (host: string) =>
      new Set(f.targets.filter((t) => t.host === host).map((t) => t.credentials ?? null));
    expect(credentialsSent('10.0.0.3')).toEqual(new Set([null]));
    expect(credentialsSent('10.0.0.2')).toEqual(new Set(['user:s3cret']));
    expect(warnings).toEqual([
      [
        'proxy credentials secret cannot be read; probing without credentials',
        { proxy: 'b', secret: 'broken', kind },
      ],
    ]);
  });

  it('Secret Manager unavailable (transient): probed without credentials, only a proxy nothing answers for counts; one line', async () => {
    const f = fakes(ECHO, new Set(['10.0.0.6']));
    const warnings: Array<[string, Record<string, unknown>]> = [];
    f.deps.log = { info: () => {}, warn: (m, fields) => void warnings.push([m, fields]) };
    f.deps.secrets = failingFor('flaky', 'transient');
    const all = [
      withSecret('a', '10.0.0.2', 'good'),
      withSecret('b', '10.0.0.3', 'flaky'),
      withSecret('d', '10.0.0.5', 'flaky'),
      withSecret('c', '10.0.0.4', 'good'),
      withSecret('dead', '10.0.0.6', 'flaky'),
    ];
    const counts = await passes(f.deps, all, 1);
    expect(counts).toMatchObject({ probed: 5, written: 3 });
    // b and d answered (a 407 or not, they are alive): no result, nothing stored; dead is dead regardless
    expect([...f.health.keys()].sort()).toEqual(['a', 'c', 'dead']);
    expect(f.health.get('dead')?.tracks.BASIC).toMatchObject({ consecutiveFail: 1 });
    const sentTo = (host: string) =>
      new Set(f.targets.filter((t) => t.host === host).map((t) => t.credentials));
    expect(sentTo('10.0.0.3')).toEqual(new Set([null]));
    expect(warnings).toEqual([
      [
        'proxy credentials unavailable right now (Secret Manager); only liveness judged this pass',
        {
          event: 'probe.credentials_unavailable',
          proxies: 2,
          first: expect.arrayContaining(['b', 'd']),
          judgedDead: 1,
        },
      ],
    ]);
    // An alert counts the line (terraform/monitoring.tf): it carries what the metric reads.
    expect(missingContractFields(warnings[0]![1])).toEqual([]);
  });
});

describe('runProbePass: mid-rotation, the version the instance serves', () => {
  it('probes with status.servedCredentials (what crawlers are handed), not the newest version', async () => {
    const f = fakes(ECHO, new Set());
    f.deps.secrets = { access: async (ref) => `user:v${ref.version}` };
    const rolling = aProxy({
      name: 'r',
      spec: managedSpec({ credentialsRef: { secret: 's' } }),
      status: {
        ip: '10.0.0.5',
        providerId: 'zones/z/instances/r',
        servedCredentials: { secret: 's', version: '3' },
      },
    });
    await passes(f.deps, [rolling], 1);
    expect(new Set(f.targets.map((t) => t.credentials))).toEqual(new Set(['user:v3']));
  });
});

describe('runProbePass: a status that lags the stored verdict (a lost publish)', () => {
  const cond = (type: string, status: 'True' | 'False', reason: string) =>
    condition(type, status, reason, t0);
  // Reconcile has folded AVAILABLE; the probe has since stored UNHEALTHY, but its publish was lost.
  const shownHealthy = () =>
    aProxy({
      name: 'lag',
      status: {
        ip: '10.0.0.9',
        providerId: 'zones/z/instances/lag',
        conditions: [cond('Provisioned', 'True', 'Created'), cond('Healthy', 'True', 'ProbeSucceeded')],
      },
    });

  /** The proxy probed (and failed) up to its threshold: stored UNHEALTHY, listed Healthy=True. */
  async function lagging(republished?: PublishHolds) {
    const f = fakes(null, new Set(['10.0.0.9']));
    f.deps.republished = republished;
    const p = shownHealthy();
    const ms = p.spec.healthCheck.intervalSeconds * 1000;
    const next = (i: number, sent?: Set<string>) =>
      runProbePass(f.deps, [p], new Date(t0.getTime() + i * ms), new Date(t0.getTime() + (i + 1) * ms), sent);
    const threshold = p.spec.healthCheck.failureThreshold;
    for (let i = 0; i < threshold; i++) await next(i);
    return { f, next, threshold };
  }

  it('publishes again on each pass until a publish goes out, then not within the same invocation', async () => {
    const { f, next, threshold } = await lagging();
    expect(f.health.get('lag')?.verdict).toBe('UNHEALTHY');
    // From here the stored state no longer changes; `p` is the status as listed, still Healthy=True.
    f.publisher.published.length = 0;
    f.publisher.failNext();
    await next(threshold);
    expect(f.publisher.published).toEqual([]);
    const counts = await next(threshold + 1);
    expect(counts.written).toBe(0);
    expect(f.publisher.published).toEqual([{ proxy: 'lag', reason: 'health-transition' }]);

    // Within one invocation the fleet was listed once: after a request went out, later passes wait for it.
    const sent = new Set<string>();
    await next(threshold + 2, sent);
    expect(sent).toEqual(new Set(['lag']));
    expect((await next(threshold + 3, sent)).transitions).toBe(0);
    expect(f.publisher.published).toHaveLength(2);
  });

  it("with the instance's holds: published again after 5, 10 and 20 minutes while status lags, not on every pass", async () => {
    // Reconcile cannot fold the verdict (a Compute outage): status keeps lagging, pass after pass, each
    // its own invocation. The transition itself went out on the threshold pass.
    const { f, next, threshold } = await lagging(new PublishHolds(300_000));
    expect(f.publisher.published.length).toBeGreaterThan(0);
    f.publisher.published.length = 0;
    const ms = shownHealthy().spec.healthCheck.intervalSeconds * 1000;
    const republishedAfter: number[] = []; // minutes after the transition
    for (let i = 0; (i + 1) * ms <= 40 * 60_000; i++) {
      const before = f.publisher.published.length;
      await next(threshold + i);
      if (f.publisher.published.length > before) republishedAfter.push(((i + 1) * ms) / 60_000);
    }
    expect(republishedAfter).toEqual([5, 15, 35]);
  });

  it('with holds, a republish that failed is not held: the next pass tries again', async () => {
    const { f, next, threshold } = await lagging(new PublishHolds(300_000));
    f.publisher.published.length = 0;
    const ms = shownHealthy().spec.healthCheck.intervalSeconds * 1000;
    const firstDue = 300_000 / ms - 1; // the pass 5 minutes after the transition
    for (let i = 0; i < firstDue; i++) await next(threshold + i);
    expect(f.publisher.published).toEqual([]);
    f.publisher.failNext();
    await next(threshold + firstDue);
    expect(f.publisher.published).toEqual([]);
    await next(threshold + firstDue + 1);
    expect(f.publisher.published).toEqual([{ proxy: 'lag', reason: 'health-transition' }]);
  });

  it('a publish unconfirmed in time counts as sent: the library may still send it', async () => {
    const { f, next, threshold } = await lagging();
    f.publisher.published.length = 0;
    const sent = new Set<string>();
    f.publisher.failNext(
      new PublishError('unconfirmed', 'not confirmed within 10000 ms; it may still go out'),
    );
    await next(threshold, sent);
    expect(sent).toEqual(new Set(['lag']));
    expect((await next(threshold + 1, sent)).transitions).toBe(0);
    expect(f.publisher.published).toEqual([]);
  });
});

describe('runProbePass: a budget', () => {
  it('one proxy whose checks hang holds no other decision back: at the budget the rest are stored', async () => {
    const f = fakes(ECHO, new Set());
    const warnings: Array<[string, Record<string, unknown>]> = [];
    f.deps.log = { info: () => {}, warn: (m, fields) => void warnings.push([m, fields]) };
    const hang = new Promise<never>(() => {});
    const prober = f.deps.prober;
    let hung: AbortSignal | undefined; // what the hanging check was given to end it
    f.deps.prober = {
      ...prober,
      handshake: (...args) => {
        if (args[0].host !== '10.0.0.9') return prober.handshake(...args);
        hung = args[3];
        return hang;
      },
    };
    let fire!: () => void; // the budget's timer, fired by the test once the others are in
    f.deps.timer = (_ms, signal) =>
      new Promise<void>((resolve) => {
        fire = resolve;
        signal.addEventListener('abort', () => resolve());
      });
    const all = ['a', 'b', 'c', 'd'].map((n, i) => proxy(n, `10.0.0.${i + 1}`));
    all.push(proxy('slow', '10.0.0.9'));
    const intervalMs = all[0]!.spec.healthCheck.intervalSeconds * 1000;
    const pass = runProbePass(f.deps, all, t0, new Date(t0.getTime() + intervalMs), new Set(), null, 100_000);
    for (let i = 0; i < 50 && f.targets.length < 9; i++) await new Promise((r) => setImmediate(r));
    expect(hung?.aborted).toBe(false);
    fire();
    const counts = await pass;
    // The check still in flight is ended, not left running to its own timeout after the pass returned.
    expect(hung?.aborted).toBe(true);
    expect(counts).toMatchObject({ probed: 5, written: 4 });
    expect([...f.health.keys()].sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(warnings).toEqual([
      [
        'probe pass out of time: the proxies not decided yet wait for their next slot',
        {
          event: 'probe.pass_budget_spent',
          budgetMs: 100_000,
          decided: 4,
          undecided: 1,
          first: ['slow'],
        },
      ],
    ]);
    expect(missingContractFields(warnings[0]![1])).toEqual([]);
  });

  // The read of the due proxies' health states ran before the budget began: a slow Firestore read there,
  // then the budget's full wait for the decisions, ran the pass past the function's timeout.
  it('a read of the health states that outlasts the budget: the pass decides nothing and says so', async () => {
    const f = fakes(ECHO, new Set());
    const warnings: Array<[string, Record<string, unknown>]> = [];
    f.deps.log = { info: () => {}, warn: (m, fields) => void warnings.push([m, fields]) };
    let answer!: () => void;
    const getMany = f.deps.health.getMany;
    f.deps.health = {
      ...f.deps.health,
      getMany: (names) =>
        new Promise((resolve) => {
          answer = () => resolve(getMany(names));
        }),
    };
    let fire: (() => void) | undefined; // the budget's timer, fired by the test while the read hangs
    f.deps.timer = (_ms, signal) =>
      new Promise<void>((resolve) => {
        fire = resolve;
        signal.addEventListener('abort', () => resolve());
      });
    const all = ['a', 'b'].map((n, i) => proxy(n, `10.0.0.${i + 1}`));
    const intervalMs = all[0]!.spec.healthCheck.intervalSeconds * 1000;
    const pass = runProbePass(f.deps, all, t0, new Date(t0.getTime() + intervalMs), new Set(), null, 60_000);
    await new Promise((r) => setImmediate(r));
    expect(fire).toBeDefined(); // the budget runs while the read does
    fire!();
    expect(await pass).toBeNull();
    answer(); // too late: nothing probed, nothing stored
    await new Promise((r) => setImmediate(r));
    expect(f.targets).toEqual([]);
    expect(f.health.size).toBe(0);
    expect(warnings).toEqual([
      [
        'probe pass out of time reading the health states: its proxies are left to the next run',
        { event: 'probe.pass_budget_spent', budgetMs: 60_000, decided: 0, undecided: 2, first: ['a', 'b'] },
      ],
    ]);
    expect(missingContractFields(warnings[0]![1])).toEqual([]);
  });

  it('a pass done within its budget stores everything and says nothing', async () => {
    const f = fakes(ECHO, new Set());
    const warnings: string[] = [];
    f.deps.log = { info: () => {}, warn: (m) => void warnings.push(m) };
    const all = ['a', 'b'].map((n, i) => proxy(n, `10.0.0.${i + 1}`));
    const intervalMs = all[0]!.spec.healthCheck.intervalSeconds * 1000;
    const counts = await runProbePass(
      f.deps,
      all,
      t0,
      new Date(t0.getTime() + intervalMs),
      new Set(),
      null,
      60_000,
    );
    expect(counts).toMatchObject({ probed: 2, written: 2 });
    expect(warnings).toEqual([]);
  });
});

describe('runProbePass: PASSIVE evidence left without gateway signals', () => {
  // The passive pass counts the expiry in ticks, less half a tick for tick-start jitter (passive-track.ts
  // `tickPeriodMs`); an active pass decides at a moment of the run's loop (PROBE_LOOP_SECONDS), not at a
  // tick start: it expires the evidence only after the whole expiry (180 s here, ticks of 60 s). This
  // evidence is SUSPECT: expired, it is demoted to AVAILABLE with its failure kept (passive-track.ts).
  const signalAt = new Date(t0.getTime() + 600_000);
  /** A proxy probed healthy, ticks of 60 s; `probeAt(sec, track)` stores the PASSIVE `track` last
   *  signalled at `signalAt`, runs an active pass `sec` after it, and returns `{to, passive}` as stored. */
  async function probed() {
    const f = fakes(null, new Set());
    f.deps.passive = { ...f.deps.passive, settings: { ...f.deps.passive.settings, tickPeriodMs: 60_000 } };
    const up = proxy('up', '10.0.0.2');
    await passes(f.deps, [up], up.spec.healthCheck.successThreshold);
    const probeAt = async (sec: number, track: TrackState) => {
      f.health.set('up', { ...f.health.get('up')!, passive: { track, lastSignalAt: signalAt } });
      const to = new Date(signalAt.getTime() + sec * 1000);
      await runProbePass(f.deps, [up], new Date(to.getTime() - 30_000), to);
      return { to, passive: f.health.get('up')!.passive };
    };
    return { f, up, probeAt };
  }

  it.each<[string, number, boolean]>([
    ['keeps it', 160, true],
    ['keeps it', 179, true],
    ['expires it', 180, false],
  ])('an active probe %s %d s after the last signal', async (_verb, sec, kept) => {
    const { f, up, probeAt } = await probed();
    const suspect: TrackState = { verdict: 'SUSPECT', consecutiveOk: 0, consecutiveFail: 1 };
    const { to, passive } = await probeAt(sec, suspect);
    expect(f.targets.length).toBe(up.spec.healthCheck.successThreshold + 1); // probed in this pass
    const demoted = { track: { ...suspect, verdict: 'AVAILABLE' }, lastSignalAt: to };
    expect(passive).toEqual(kept ? { track: suspect, lastSignalAt: signalAt } : demoted);
  });

  it('an active probe drops expired evidence that is not SUSPECT, after the whole expiry', async () => {
    const { probeAt } = await probed();
    const down: TrackState = { verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: 3 };
    expect((await probeAt(179, down)).passive).toEqual({ track: down, lastSignalAt: signalAt });
    expect((await probeAt(180, down)).passive).toBeNull();
  });
});

describe('pruneHealth: the health state of proxies gone from the store', () => {
  it('is dropped whole and logged as its count and the first 100 names: a fleet deleted at once fits one entry', async () => {
    const f = fakes(null, new Set());
    const gone = Array.from({ length: 10_000 }, (_, i) => `gone-proxy-${String(i).padStart(5, '0')}`);
    for (const name of [...gone, 'kept']) f.health.set(name, {} as ProxyHealthState);
    const infos: Array<[string, Record<string, unknown>]> = [];
    f.deps.log = { info: (m, fields) => void infos.push([m, fields]), warn: () => {} };
    expect(await pruneHealth(f.deps, new Set(['kept']))).toBe(10_000);
    expect([...f.health.keys()]).toEqual(['kept']);
    const line = infos.find(([m]) => m === 'pruned health state')![1];
    expect(line).toEqual({ count: 10_000, proxies: gone.slice(0, 100), truncated: true });
    expect(JSON.stringify(line).length).toBeLessThan(32 * 1024);
  });

  it('lists a few whole, with their count', async () => {
    const f = fakes(null, new Set());
    f.health.set('a', {} as ProxyHealthState);
    const infos: Array<[string, Record<string, unknown>]> = [];
    f.deps.log = { info: (m, fields) => void infos.push([m, fields]), warn: () => {} };
    await pruneHealth(f.deps, new Set());
    expect(infos).toEqual([['pruned health state', { count: 1, proxies: ['a'] }]]);
  });
});
