// The active pass against another writer of the same health documents (an overlapping invocation's pass):
// a write that lost the race is decided again on the fresh state with the same probe results — nothing is
// probed again — at most HEALTH_WRITE_RETRIES times, then left with a WARNING; the pass never throws for it.
import { describe, expect, it } from 'vitest';
import type { ProbeResult } from '../../../shared/src/adapters/probe/proxy-probe.js';
import { healthInstanceKey } from '../../../shared/src/domain/health/instance-key.js';
import type { ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import type { HealthWrite } from '../../../shared/src/ports/health-store.js';
import { inMemoryHealthStore } from '../../../shared/src/testing/in-memory-health-store.js';
import { aProxy } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { HEALTH_WRITE_RETRIES } from './health-writes.js';
import { noOutcomes } from './passive-fixtures.unit.js';
import { type ProbeDeps, runProbePass } from './probe-pass.js';
import { echoUp } from './prober-fixtures.unit.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const refused: ProbeResult = {
  ok: false,
  latencyMs: 20,
  status: null,
  body: null,
  failure: { stage: 'DIAL', code: 'connect_refused' },
};

const proxy = (name: string) =>
  aProxy({ name, status: { ip: '10.0.0.9', providerId: `zones/z/instances/${name}` } });
const p1 = proxy('p1');
const p2 = proxy('p2');

const available = (p = p1): ProxyHealthState => ({
  proxy: p.name,
  instance: healthInstanceKey(p),
  tracks: { BASIC: { verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 } },
  verdict: 'AVAILABLE',
  latency: { reportedMs: 20, reportedAt: t0 },
  egressProblem: null,
  transitionAt: t0,
  latencyHistory: [],
  passive: null,
});

/** What a passive commit of the next invocation stores meanwhile: the gateways' first failed signal. */
const withPassiveFailure = (s: ProxyHealthState): ProxyHealthState => ({
  ...s,
  passive: { track: { verdict: 'SUSPECT', consecutiveOk: 0, consecutiveFail: 1 }, lastSignalAt: t0 },
});

/** Every proxy refuses connections; `meanwhile` runs before each write is checked (the other writer). */
function fakes(health: Map<string, ProxyHealthState>, meanwhile: (w: HealthWrite) => void) {
  const publisher = new RecordingReconcilePublisher();
  const warned: Array<{ message: string; fields: Record<string, unknown> }> = [];
  const calls = { probes: 0, observed: 0, writes: [] as string[][] };
  const store = inMemoryHealthStore(health, { beforeWrite: meanwhile });
  const deps: ProbeDeps = {
    health: {
      ...store,
      writeMany: (writes) => {
        calls.writes.push(writes.map((w) => w.state.proxy));
        return store.writeMany(writes);
      },
    },
    publisher,
    secrets: { access: async () => 'user:pass' },
    prober: {
      direct: echoUp,
      handshake: async () => {
        calls.probes++;
        return refused;
      },
      probe: async () => {
        calls.probes++;
        return refused;
      },
    },
    log: { info: () => {}, warn: (message, fields) => void warned.push({ message, fields }) },
    recorder: { observe: () => void calls.observed++ },
    tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
    concurrency: 4,
    passive: noOutcomes(),
  };
  return { deps, publisher, warned, calls };
}

const onePass = (deps: ProbeDeps, all = [p1]) =>
  runProbePass(deps, all, t0, new Date(t0.getTime() + p1.spec.healthCheck.intervalSeconds * 1000));

describe('runProbePass: a health write that lost to another pass', () => {
  it('is decided again on the state that pass stored, with the same probe result: both updates hold', async () => {
    const health = new Map([['p1', available()]]);
    let other = 0;
    const f = fakes(health, (w) => {
      if (w.state.proxy === 'p1' && other++ === 0) health.set('p1', withPassiveFailure(health.get('p1')!));
    });
    const c = await onePass(f.deps);
    const stored = health.get('p1')!;
    // The other pass's passive signal, and this pass's failed probe.
    expect(stored.passive?.track.consecutiveFail).toBe(1);
    expect(stored.tracks.BASIC).toMatchObject({ consecutiveOk: 0, consecutiveFail: 1 });
    expect(c.written).toBe(1);
    // Probed (and observed) once; written twice, the second time on top of the fresh state.
    expect(f.calls.probes).toBe(1);
    expect(f.calls.observed).toBe(1);
    expect(f.calls.writes).toEqual([['p1'], ['p1']]);
    expect(f.warned).toEqual([]);
  });

  it('a proxy without state when read, created by the other pass meanwhile, is not clobbered by a second create', async () => {
    const health = new Map<string, ProxyHealthState>();
    const theirs: ProxyHealthState = {
      ...available(),
      tracks: { BASIC: { verdict: null, consecutiveOk: 0, consecutiveFail: 1 } },
      verdict: null,
    };
    const f = fakes(health, (w) => {
      if (w.state.proxy === 'p1' && !health.has('p1')) health.set('p1', theirs);
    });
    await onePass(f.deps);
    // Its failed probe and this pass's: two failures counted, not one.
    expect(health.get('p1')!.tracks.BASIC).toMatchObject({ consecutiveFail: 2 });
  });

  it(`gives up after ${HEALTH_WRITE_RETRIES} retries with a WARNING, without throwing; the other proxies are written and the lost one is not published`, async () => {
    const health = new Map([
      ['p1', available()],
      ['p2', available(p2)],
    ]);
    // The other pass wins every race for p1: a new version before each of this pass's writes.
    const f = fakes(health, (w) => {
      if (w.state.proxy === 'p1') health.set('p1', { ...health.get('p1')! });
    });
    const c = await onePass(f.deps, [p1, p2]);
    expect(f.calls.writes.filter((names) => names.includes('p1'))).toHaveLength(1 + HEALTH_WRITE_RETRIES);
    expect(f.calls.probes).toBe(2);
    expect(f.warned).toEqual([
      {
        message: 'health writes kept losing to another pass; left to the next tick',
        fields: { count: 1, proxies: ['p1'], attempts: 1 + HEALTH_WRITE_RETRIES },
      },
    ]);
    expect(health.get('p1')).toEqual(available());
    expect(health.get('p2')!.tracks.BASIC).toMatchObject({ consecutiveFail: 1 });
    expect(c.written).toBe(1);
    expect(f.publisher.published.map((r) => r.proxy)).not.toContain('p1');
    expect(f.publisher.published.map((r) => r.proxy)).toContain('p2');
  });
});
