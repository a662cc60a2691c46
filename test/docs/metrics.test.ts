// The Prometheus metrics the API and the gateway serve on /metrics, built as their wiring builds them
// (prom-client registries, stub inputs) and read back from the registry: names and help text follow the
// Prometheus conventions (snake case, counters end in _total, units spelled out, help that says something),
// labels are only the bounded ones the docs explain (never a proxy, a target or a client), and every
// metric is documented. references.test.ts checks the other direction (a metric a doc names exists).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { promProxyPhaseGauge } from '../../functions/api/src/fleet/phase-gauge.js';
import { promLeaseMetrics } from '../../functions/api/src/leases/metrics.js';
import { promRateLimitRefusals } from '../../functions/api/src/middleware/rate-limit-metrics.js';
import { PromRecorder } from '../../functions/gateway/src/metrics.js';
import { repoRoot } from '../terraform/support/paths.js';
import { docPaths } from './support/markdown.js';

/** Every label our metrics may carry, and what bounds its values (docs/gateway.md, docs/leases.md). */
const BOUNDED_LABELS: Record<string, string> = {
  listener: 'proxy or fetch',
  route: "a route's name: at most 1,000 routes, set by an admin",
  outcome: 'the fixed outcome codes',
  reason: "the SSRF guard's fixed reasons",
  kind: 'the socket kinds',
  op: 'the lease operations',
  phase: 'the proxy phases',
  class: "the rate limits' six classes: five route classes and auth-failure",
};

async function ourMetrics() {
  const gateway = new PromRecorder({
    activeTunnels: () => 0,
    reserved: () => 0,
    openSockets: () => ({ proxyClients: 0, upstreams: 0, httpClients: 0 }),
    snapshotAgeSeconds: () => 1,
    snapshotVersion: () => 1,
    accepting: () => true,
    outcomeQueueSize: () => 0,
    suspectUpstreams: () => 0,
    suspectFallbacks: () => 0,
  });
  gateway.request('proxy', 'default', 'ok');
  gateway.ssrfRefused('proxy', 'private');
  gateway.redialed('proxy');
  const api = new Registry();
  promProxyPhaseGauge(api, async () => ({}) as never, { maxAgeMs: 0, nowMs: () => 0 });
  promLeaseMetrics(api, async () => 0, { nowMs: () => 0 }).leaseRequest('acquire', 'granted');
  promRateLimitRefusals(api)('lease-acquire');
  const all = [
    ...(await gateway.registry.getMetricsAsJSON()).map((m) => ({ ...m, service: 'gateway' })),
    ...(await api.getMetricsAsJSON()).map((m) => ({ ...m, service: 'api' })),
  ];
  // prom-client's own process metrics (collectDefaultMetrics) follow its conventions, not ours.
  return all.filter((m) => /^(gateway|proxyplane)_/.test(m.name));
}

describe('the /metrics of the API and the gateway', () => {
  it('are named and described the Prometheus way', async () => {
    const metrics = await ourMetrics();
    expect(metrics.length).toBeGreaterThanOrEqual(12);
    for (const m of metrics) {
      expect(m.name, m.name).toMatch(/^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/);
      if (String(m.type) === 'counter') expect(m.name, `${m.name}: a counter`).toMatch(/_total$/);
      else expect(m.name, `${m.name}: not a counter`).not.toMatch(/_total$/);
      // A unit in the name is a base unit (seconds, bytes), never ms or kb.
      expect(m.name, m.name).not.toMatch(/_(ms|milliseconds|minutes|kb|mb|kib|mib)(_|$)/);
      expect(m.help.length, `${m.name}: help`).toBeGreaterThan(15);
    }
  });

  it('carry only labels whose values are bounded', async () => {
    const labels = (await ourMetrics()).flatMap((m) =>
      m.values.flatMap((v) => Object.keys(v.labels).map((l) => `${m.name}{${l}}`)),
    );
    expect(labels.length).toBeGreaterThan(3);
    expect(labels.filter((l) => !(/\{(\w+)\}$/.exec(l)![1]! in BOUNDED_LABELS))).toEqual([]);
  });

  it('are each named in a doc', async () => {
    const docs = docPaths(repoRoot)
      .map((p) => readFileSync(join(repoRoot, p), 'utf8'))
      .join('\n');
    // The whole name: `gateway_x_total` does not document `gateway_x`.
    const named = (name: string) => new RegExp(`\`${name}(?![a-z0-9_])`).test(docs);
    const undocumented = (await ourMetrics()).filter((m) => !named(m.name)).map((m) => m.name);
    expect(undocumented).toEqual([]);
  });
});
