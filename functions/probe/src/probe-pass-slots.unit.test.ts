// The TARGET tier's own slots (docs/health.md § TARGET): a route's target that hangs must hold TARGET
// slots only, never the proxy slots the fleet's BASIC probes need. Before, a proxy ran its TARGET checks
// inside its probe slot, so a hanging target cut a pass to PROBE_CONCURRENCY proxies per timeout.
import { describe, expect, it } from 'vitest';
import type { ProbeResult } from '../../../shared/src/adapters/probe/proxy-probe.js';
import type { ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import { RoutingRules } from '../../../shared/src/messages/gateway-snapshot.js';
import { inMemoryHealthStore } from '../../../shared/src/testing/in-memory-health-store.js';
import { aProxy, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { noOutcomes } from './passive-fixtures.unit.js';
import { type ProbeDeps, runProbePass } from './probe-pass.js';
import { echoUp } from './prober-fixtures.unit.js';
import type { Timer } from './slot-pool.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const HEALTH_URL = 'http://health.example/';
const SHOP = 'https://shop.example/';
const routing = RoutingRules.parse([
  { name: 'shop', match: { hosts: ['shop.example'] }, policy: 'round-robin', targetCheck: { url: SHOP } },
]);

const PROXY_SLOTS = 2;
const TARGET_SLOTS = 4;
const FLEET = Array.from({ length: 20 }, (_, i) =>
  aProxy({
    name: `p${String(i).padStart(2, '0')}`,
    spec: managedSpec({
      gatewayPool: true,
      healthCheck: { url: HEALTH_URL, successThreshold: 1, failureThreshold: 1, timeoutSeconds: 5 },
    }),
    status: { ip: `10.0.0.${i + 1}`, providerId: `zones/z/instances/p${i}` },
  }),
);

/** BASIC answers at once; the target answers at once unless `hang` is on, then only when the test calls
 *  `timeOut()` — the check's own timeout firing, as `probeThroughProxy`'s deadline does. The wait for a
 *  TARGET slot expires when the test calls `expireWaits()`. */
function fakes() {
  const health = new Map<string, ProxyHealthState>();
  const writes: number[] = [];
  const warnings: Array<Record<string, unknown>> = [];
  const state = {
    hang: false,
    basicAsked: 0,
    targetAsked: 0,
    targetDone: 0,
    targetInFlight: 0,
    maxTarget: 0,
  };
  const hanging: Array<() => void> = [];
  /** The proxies (by address) each TARGET check went through, in the order they were asked. */
  const targetHosts: string[] = [];
  const waits: Array<() => void> = [];
  const answer = (ok: boolean, status: number | null): ProbeResult => ({
    ok,
    latencyMs: ok ? 20 : 5000,
    status,
    body: null,
    failure: ok ? null : { stage: 'RESPONSE_HEADERS', code: 'timeout' },
  });
  const store = inMemoryHealthStore(health);
  const timer: Timer = (_ms, signal) =>
    new Promise((resolve) => {
      waits.push(resolve);
      signal.addEventListener('abort', () => resolve());
    });
  const deps: ProbeDeps = {
    health: {
      ...store,
      writeMany: async (states) => {
        writes.push(states.length);
        return store.writeMany(states);
      },
    },
    publisher: new RecordingReconcilePublisher(),
    secrets: { access: async () => 'user:pass' },
    prober: {
      direct: echoUp,
      handshake: async () => answer(true, 200),
      probe: async (target, opts) => {
        if (opts.url === HEALTH_URL) {
          state.basicAsked++;
          return answer(true, 200);
        }
        state.targetAsked++;
        targetHosts.push(target.host);
        state.targetInFlight++;
        state.maxTarget = Math.max(state.maxTarget, state.targetInFlight);
        if (state.hang) await new Promise<void>((r) => hanging.push(r));
        state.targetInFlight--;
        state.targetDone++;
        return state.hang ? answer(false, null) : answer(true, 200);
      },
    },
    log: { info: () => {}, warn: (_m, f) => void warnings.push(f) },
    recorder: { observe: () => {} },
    tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
    concurrency: PROXY_SLOTS,
    targetConcurrency: TARGET_SLOTS,
    timer,
    passive: noOutcomes(),
  };
  return {
    deps,
    health,
    writes,
    warnings,
    state,
    targetHosts,
    timeOut: () => hanging.splice(0).forEach((r) => void r()),
    expireWaits: () => waits.splice(0).forEach((r) => void r()),
  };
}

const pass = (deps: ProbeDeps, i: number) => {
  const ms = FLEET[0]!.spec.healthCheck.intervalSeconds * 1000;
  return runProbePass(
    deps,
    FLEET,
    new Date(t0.getTime() + i * ms),
    new Date(t0.getTime() + (i + 1) * ms),
    new Set(),
    routing,
  );
};

/** Lets every runnable promise chain run (the fakes answer without timers). */
const settle = async () => {
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
};

describe('runProbePass: a target that hangs holds TARGET slots, not probe slots', () => {
  it(`probes the BASIC tier of all ${FLEET.length} proxies through ${PROXY_SLOTS} slots before any hanging check ends`, async () => {
    const f = fakes();
    f.state.hang = true;
    const running = pass(f.deps, 0);
    await settle();
    // Every proxy's BASIC verdict is in while the first TARGET checks still hang…
    expect(f.state.basicAsked).toBe(FLEET.length);
    expect(f.state.targetDone).toBe(0);
    // …and the hanging checks hold the TARGET slots only: no more of them in flight than those.
    expect(f.state.targetAsked).toBe(TARGET_SLOTS);
    // Each round of timeouts lets the next TARGET_SLOTS checks run; every proxy is checked (no wait expired).
    for (let round = 0; f.state.targetDone < FLEET.length && round < FLEET.length; round++) {
      f.timeOut();
      await settle();
    }
    const counts = await running;
    expect(f.state.maxTarget).toBe(TARGET_SLOTS);
    expect(f.state.targetDone).toBe(FLEET.length);
    // The pass still writes once, after every proxy's decision saw both its BASIC and its TARGET result.
    expect(f.writes).toEqual([FLEET.length]);
    expect(counts).toMatchObject({ probed: FLEET.length, written: FLEET.length });
    for (const p of FLEET) {
      expect(f.health.get(p.name)!.tracks).toMatchObject({
        BASIC: { verdict: 'AVAILABLE' },
        'TARGET:shop': { verdict: 'UNHEALTHY' },
      });
    }
    expect(f.warnings).toEqual([]);
  });

  it('a check that finds no TARGET slot within its timeout is skipped and its track kept, so the pass ends', async () => {
    const f = fakes();
    await pass(f.deps, 0); // the target answers: every proxy's TARGET:shop track is AVAILABLE
    const before = structuredClone(f.health);
    f.state.hang = true;
    const running = pass(f.deps, 1);
    await settle();
    f.expireWaits(); // the checks queued behind the hanging ones have waited one timeout
    await settle();
    f.timeOut();
    const counts = await running;
    // TARGET_SLOTS proxies were checked (and failed); the others' checks were skipped, their tracks kept.
    const checked = FLEET.filter((p) => f.health.get(p.name)!.tracks['TARGET:shop']?.verdict === 'UNHEALTHY');
    expect(checked).toHaveLength(TARGET_SLOTS);
    for (const p of FLEET.filter((x) => !checked.includes(x))) {
      expect(f.health.get(p.name)).toEqual(before.get(p.name));
    }
    expect(counts.written).toBe(TARGET_SLOTS);
    expect(f.writes).toEqual([FLEET.length, TARGET_SLOTS]);
    expect(f.warnings).toEqual([
      {
        skipped: FLEET.length - TARGET_SLOTS,
        routes: { shop: FLEET.length - TARGET_SLOTS },
        targetConcurrency: TARGET_SLOTS,
      },
    ]);
  });

  it('a pass out of time while TARGET checks wait still records and stores every BASIC check it ran', async () => {
    const f = fakes();
    f.state.hang = true;
    const observed: string[] = [];
    f.deps.recorder = { observe: (proxy, o) => void observed.push(`${proxy} ${o.tier}`) };
    const warned: string[] = [];
    f.deps.log = { info: () => {}, warn: (message) => void warned.push(message) };
    const BUDGET_MS = 100_000;
    let fire!: () => void; // the pass's budget, fired by the test
    const slotTimer = f.deps.timer!;
    f.deps.timer = (ms, signal) =>
      ms !== BUDGET_MS
        ? slotTimer(ms, signal)
        : new Promise<void>((resolve) => {
            fire = resolve;
            signal.addEventListener('abort', () => resolve());
          });
    const ms = FLEET[0]!.spec.healthCheck.intervalSeconds * 1000;
    const running = runProbePass(
      f.deps,
      FLEET,
      t0,
      new Date(t0.getTime() + ms),
      new Set(),
      routing,
      BUDGET_MS,
    );
    await settle();
    expect(f.state.basicAsked).toBe(FLEET.length);
    fire();
    const counts = await running;
    // Every TARGET check hung or waited: each proxy is decided on its BASIC verdict alone, its TARGET
    // track left as it was (none yet) — a hanging target site does not freeze the proxy's own health.
    expect(counts?.written).toBe(FLEET.length);
    expect(observed.sort()).toEqual(FLEET.map((p) => `${p.name} BASIC`).sort());
    for (const p of FLEET) {
      const tracks = f.health.get(p.name)!.tracks;
      expect(tracks.BASIC).toMatchObject({ consecutiveOk: 1 });
      expect(tracks['TARGET:shop']?.consecutiveFail ?? 0).toBe(0);
    }
    // Nobody is left undecided (the alert's event is not logged); the cut TARGET checks are said apart.
    expect(warned).toEqual([
      'probe pass out of time for TARGET checks: decided on BASIC/EGRESS alone, TARGET tracks kept',
    ]);
  });

  it('the proxies whose checks are skipped change from pass to pass (no track frozen by listing order)', async () => {
    const f = fakes();
    f.state.hang = true;
    const checkedIn: string[][] = [];
    for (let i = 0; i < 3; i++) {
      f.targetHosts.length = 0;
      const running = pass(f.deps, i);
      await settle();
      f.expireWaits();
      await settle();
      f.timeOut();
      await running;
      checkedIn.push([...f.targetHosts].sort());
    }
    expect(checkedIn.map((c) => c.length)).toEqual([TARGET_SLOTS, TARGET_SLOTS, TARGET_SLOTS]);
    expect(new Set(checkedIn.flat()).size).toBeGreaterThan(TARGET_SLOTS);
  });
});
