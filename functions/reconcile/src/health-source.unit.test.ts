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
  it("reads the probe's verdict together with the instance it is about", async () => {
    expect(await source(state({})).verdictFor(live)).toMatchObject({
      instance: 'zones/z/instances/i',
      verdict: { healthy: true, latencyMillis: 42, checkedAt: at },
    });
    expect(await source(state({ verdict: 'UNHEALTHY' })).verdictFor(live)).toMatchObject({
      verdict: { healthy: false },
    });
  });

  it('reports a state without a verdict, and a state of another instance, as they are', async () => {
    // The reconcile domain decides what they mean for status (conditions.ts verdictFor, external.ts).
    expect(await source(state({ verdict: null })).verdictFor(live)).toEqual({
      instance: 'zones/z/instances/i',
      verdict: null,
    });
    const other = await source(state({ instance: 'zones/z/instances/i@old' })).verdictFor(live);
    expect(other?.instance).toBe('zones/z/instances/i@old');
  });

  it.each([
    ['no state', null, live],
    ['a managed proxy without an instance yet', state({}), aProxy({})],
    [
      'being deleted',
      state({}),
      aProxy({ deletionRequestedAt: at, status: { providerId: 'zones/z/instances/i' } }),
    ],
  ])('reads nothing for %s', async (_l, s, p) => {
    expect(await source(s).verdictFor(p)).toBeNull();
  });

  it('reads an external proxy before its first pass too', async () => {
    const ext = aProxy({ spec: externalSpec() });
    expect(await source(state({ instance: '203.0.113.7:8080' })).verdictFor(ext)).toMatchObject({
      instance: '203.0.113.7:8080',
      verdict: { healthy: true },
    });
  });
});
