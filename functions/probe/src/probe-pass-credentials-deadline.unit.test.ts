// A Secret Manager that does not answer (gax retrying UNAVAILABLE for up to 600 s) must not hold the probe
// slots: docs/health.md § Credentials — the stale copy is served, or only the proxy's liveness is judged.
import { describe, expect, it } from 'vitest';
import type { ProbeResult } from '../../../shared/src/adapters/probe/proxy-probe.js';
import type { ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import type { SecretRef } from '../../../shared/src/domain/proxy.js';
import { SecretAccessError } from '../../../shared/src/ports/secrets.js';
import { inMemoryHealthStore } from '../../../shared/src/testing/in-memory-health-store.js';
import { aProxy, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { noOutcomes } from './passive-fixtures.unit.js';
import {
  CREDENTIALS_MISS_DEADLINE_MS,
  CREDENTIALS_READ_DEADLINE_MS,
  type ProbeDeps,
  runProbePass,
} from './probe-pass.js';
import { CREDENTIALS_REFUSAL_TTL_MS, credentialsCache } from './wiring.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const DEAD = '10.0.0.6';
const res = (ok: boolean): ProbeResult => ({
  ok,
  latencyMs: 5,
  status: ok ? 200 : null,
  body: null,
  failure: ok ? null : { stage: 'DIAL', code: 'econnrefused' },
});
/** A managed proxy with a 1 s check timeout whose credentials are the secret `secret`. */
const withSecret = (name: string, ip: string, secret: string) =>
  aProxy({
    name,
    spec: managedSpec({
      credentialsRef: { secret },
      healthCheck: { timeoutSeconds: 1, successThreshold: 1, failureThreshold: 1 },
    }),
    status: { ip, providerId: `zones/z/instances/${name}` },
  });
const never = () => new Promise<string>(() => {});

function setup(secrets: ProbeDeps['secrets']) {
  const health = new Map<string, ProxyHealthState>();
  const warnings: Array<[string, Record<string, unknown>]> = [];
  const dialled: Array<{ host: string; credentials: unknown }> = [];
  const answer = async (t: { host: string; credentials?: unknown }) => {
    dialled.push({ host: t.host, credentials: t.credentials ?? null });
    return res(t.host !== DEAD);
  };
  const deps: ProbeDeps = {
    health: inMemoryHealthStore(health),
    publisher: new RecordingReconcilePublisher(),
    secrets,
    prober: { direct: async () => res(true), handshake: answer, probe: answer },
    log: { info: () => {}, warn: (m, f) => void warnings.push([m, f]) },
    recorder: { observe: () => {} },
    tiers: { echoUrl: null, callerIps: [], rejectUnauthorized: true },
    concurrency: 2,
    passive: noOutcomes(),
  };
  return { deps, health, warnings, dialled };
}

describe('runProbePass: a credentials read Secret Manager does not answer', () => {
  it('holds the probe slot no longer than the check timeout: only liveness is judged, the rest probed', async () => {
    const { deps, health, warnings } = setup({
      access: (ref: SecretRef) => (ref.secret === 'hanging' ? never() : Promise.resolve('user:pw')),
    });
    // Two probe slots, three proxies whose read hangs: unbounded, they held both slots until the budget.
    const all = [
      withSecret('b', '10.0.0.3', 'hanging'),
      withSecret('d', '10.0.0.5', 'hanging'),
      withSecret('dead', DEAD, 'hanging'),
      withSecret('a', '10.0.0.2', 'good'),
      withSecret('c', '10.0.0.4', 'good'),
    ];
    const started = Date.now();
    const counts = await runProbePass(deps, all, t0, new Date(t0.getTime() + 30_000), new Set(), [], 4_000);
    expect(Date.now() - started).toBeLessThan(3_500);
    expect(counts).not.toBeNull();
    // Nothing answers for 'dead': counted as failing. 'b' and 'd' answered: no result, tracks as they were.
    expect(health.get('dead')?.tracks.BASIC?.consecutiveFail).toBe(1);
    expect(health.get('a')?.tracks.BASIC?.consecutiveOk).toBe(1);
    expect(health.get('c')?.tracks.BASIC?.consecutiveOk).toBe(1);
    expect(health.has('b')).toBe(false);
    expect(health.has('d')).toBe(false);
    const unavailable = warnings.find(([, f]) => f.event === 'probe.credentials_unavailable')?.[1];
    expect(unavailable).toMatchObject({ proxies: 2, judgedDead: 1 });
    expect(warnings.some(([, f]) => f.event === 'probe.pass_budget_spent')).toBe(false);
  });

  it("the probe's credentials cache answers with its stale copy at its read deadline, within the check", async () => {
    let now = t0.getTime();
    let hang = false;
    const cache = credentialsCache(
      { access: async () => (hang ? never() : 'user:pw') },
      { now: () => new Date(now) },
    );
    const { deps, health, dialled } = setup(cache);
    const p = withSecret('a', '10.0.0.2', 'good');
    expect(await cache.access(p.spec.credentialsRef!)).toBe('user:pw');
    // Past the cache's 60 s, within its stale-if-error time, Secret Manager stops answering.
    now += 90_000;
    hang = true;
    const started = Date.now();
    await runProbePass(deps, [p], t0, new Date(t0.getTime() + 30_000), new Set(), [], 4_000);
    // At the read deadline, not the miss deadline (nor the check's own bound: liveness alone, credentials
    // null, below). Half a second over the read deadline asked a loaded worker's timer to be that punctual.
    expect(Date.now() - started).toBeGreaterThanOrEqual(CREDENTIALS_READ_DEADLINE_MS - 50);
    expect(Date.now() - started).toBeLessThan(CREDENTIALS_MISS_DEADLINE_MS);
    // Probed with the stale credentials and judged whole, not on its liveness alone.
    expect(dialled.map((d) => d.credentials)).not.toContain(null);
    expect(health.get('a')?.tracks.BASIC?.consecutiveOk).toBe(1);
  });

  it("with no copy to serve, the cache waits past its read deadline, within the check's timeout", async () => {
    // A new instance's first read, slower than 1 s: cut at the deadline, every credentialed proxy's pass
    // was lost (probe.credentials_unavailable at each cold start).
    const cache = credentialsCache(
      { access: () => new Promise((resolve) => setTimeout(() => resolve('user:pw'), 1_500)) },
      { now: () => t0 },
    );
    const { deps, health, dialled, warnings } = setup(cache);
    const base = withSecret('a', '10.0.0.2', 'good');
    const p = {
      ...base,
      spec: { ...base.spec, healthCheck: { ...base.spec.healthCheck, timeoutSeconds: 3 } },
    };
    await runProbePass(deps, [p], t0, new Date(t0.getTime() + 30_000), new Set(), [], 4_000);
    expect(dialled.map((d) => d.credentials)).not.toContain(null);
    expect(health.get('a')?.tracks.BASIC?.consecutiveOk).toBe(1);
    expect(warnings.some(([, f]) => f.event === 'probe.credentials_unavailable')).toBe(false);
  });
});

describe("runProbePass: a secret the probe's account may not read", () => {
  it('is asked for once a minute, not at every check of every proxy naming it', async () => {
    let now = t0.getTime();
    let reads = 0;
    const cache = credentialsCache(
      {
        access: async (ref) => {
          reads++;
          throw new SecretAccessError('permission_denied', ref.secret, 'denied');
        },
      },
      { now: () => new Date(now) },
    );
    const { deps, health, dialled } = setup(cache);
    const all = ['a', 'b', 'c'].map((n, i) => withSecret(n, `10.0.0.${i + 2}`, 'shared'));
    for (let pass = 0; pass < 3; pass++) {
      await runProbePass(deps, all, new Date(now), new Date(now + 30_000), new Set(), [], 4_000);
      now += 10_000;
    }
    // Nine checks, one read; each probed without credentials, as a refused secret is (health.md).
    expect(reads).toBe(1);
    expect(dialled.length).toBeGreaterThanOrEqual(9);
    expect(dialled.every((d) => d.credentials === null)).toBe(true);
    expect(health.get('a')?.tracks.BASIC).toBeDefined();
    now = t0.getTime() + CREDENTIALS_REFUSAL_TTL_MS;
    await runProbePass(deps, all, new Date(now), new Date(now + 30_000), new Set(), [], 4_000);
    expect(reads).toBe(2);
  });
});
