import { describe, expect, it } from 'vitest';
import type { ProbeResult, ProbeTarget } from '../../../shared/src/adapters/probe/proxy-probe.js';
import { healthVerdictOf, type ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import { aProxy } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { type ProbeDeps, runProbePass } from './probe-pass.js';

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
  const deps: ProbeDeps = {
    health: {
      getMany: async (names) => new Map(names.flatMap((n) => (health.has(n) ? [[n, health.get(n)!]] : []))),
      get: async (n) => health.get(n) ?? null,
      writeMany: async (states) => {
        for (const s of states) health.set(s.proxy, s);
      },
      deleteMany: async () => {},
      listNames: async () => [...health.keys()],
    },
    publisher,
    secrets: { access: async () => 'user:pass' },
    prober: {
      handshake: async (target) => {
        targets.push(target);
        return result(!down.has(target.host));
      },
      probe: async (target) => {
        targets.push(target);
        return result(!down.has(target.host), JSON.stringify({ ip: target.host, headers: {} }));
      },
    },
    metrics: { observe: () => {}, forget: () => {} },
    log: { info: () => {}, warn: () => {} },
    tiers: { echoUrl, callerIps: ['192.0.2.1'], rejectUnauthorized: true },
    concurrency: 4,
    passive: {
      outcomes: { between: async () => [] },
      feed: { cursor: async () => null, commit: async () => {} },
      settings: { successThreshold: 2, failureThreshold: 3, expiryMs: 180_000 },
      rule: { minSamples: 5, maxFailureRatio: 0.5 },
      settleMs: 5000,
    },
  };
  return { deps, health, publisher, targets };
}

const proxy = (name: string, ip: string) =>
  aProxy({ name, status: { ip, providerId: `zones/z/instances/${name}` } });

/** `n` passes, each over one whole interval (every proxy is due once per pass). */
async function passes(deps: ProbeDeps, all: ProxyResource[], n: number) {
  const intervalMs = all[0]!.spec.healthCheck.intervalSeconds * 1000;
  for (let i = 0; i < n; i++) {
    await runProbePass(
      deps,
      all,
      new Date(t0.getTime() + i * intervalMs),
      new Date(t0.getTime() + (i + 1) * intervalMs),
    );
  }
}

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
