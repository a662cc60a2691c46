import { describe, expect, it } from 'vitest';
import type { ProxyHealthState } from '../../../shared/src/domain/health/proxy-health.js';
import { aProxy, externalSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { storeHealthSource } from './health-source.js';

const at = new Date('2026-03-01T00:00:00Z');
const state = (over: Partial<ProxyHealthState>): ProxyHealthState => ({
  proxy: 'proxy-a',
  instance: 'zones/z/instances/i',
  tracks: {},
  verdict: 'AVAILABLE',
  latency: { reportedMs: 42, reportedAt: at },
  egressProblem: null,
  transitionAt: at,
  ...over,
});
const source = (s: ProxyHealthState | null) => storeHealthSource({ get: async () => s });
const live = aProxy({ status: { providerId: 'zones/z/instances/i' } });

describe('storeHealthSource (the applyHealth seam)', () => {
  it("folds the probe's verdict for the current instance into a Healthy verdict", async () => {
    expect(await source(state({})).verdictFor(live)).toMatchObject({
      healthy: true,
      latencyMillis: 42,
      checkedAt: at,
    });
    expect(await source(state({ verdict: 'UNHEALTHY' })).verdictFor(live)).toMatchObject({ healthy: false });
  });

  it.each([
    ['no state', null, live],
    ['no verdict yet', state({ verdict: null }), live],
    ['another instance (replaced)', state({ instance: 'zones/z/instances/old' }), live],
    [
      'being deleted',
      state({}),
      aProxy({ deletionRequestedAt: at, status: { providerId: 'zones/z/instances/i' } }),
    ],
  ])('ignores %s', async (_l, s, p) => {
    expect(await source(s).verdictFor(p)).toBeNull();
  });

  it('keys an external proxy by its endpoint', async () => {
    const ext = aProxy({ spec: externalSpec() });
    expect(await source(state({ instance: '203.0.113.7:8080' })).verdictFor(ext)).toMatchObject({
      healthy: true,
    });
  });
});
