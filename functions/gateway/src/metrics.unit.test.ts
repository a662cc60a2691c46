import { describe, expect, it } from 'vitest';
import { tallyTraffic, trafficDelta } from '../../../shared/src/domain/gateway/traffic.js';
import { PromRecorder } from './metrics.js';

const recorder = () =>
  new PromRecorder({
    activeTunnels: () => 0,
    reserved: () => 0,
    openSockets: () => ({}),
    snapshotAgeSeconds: () => null,
    snapshotVersion: () => null,
    accepting: () => true,
    outcomeQueueSize: () => 0,
    suspectUpstreams: () => null,
    suspectFallbacks: () => 0,
  });

const series = async (m: PromRecorder) =>
  (await m.registry.metrics()).split('\n').filter((l) => l.startsWith('gateway_requests_total{'));
const totals = (m: PromRecorder) => tallyTraffic(m.requestCounts(), 0, 0);

describe('PromRecorder: the request counts of routes gone from the routing', () => {
  it('forgets their gateway_requests_total series, keeps live routes and "-"', async () => {
    const m = recorder();
    m.request('proxy', 'keep', 'ok');
    m.request('fetch', 'gone', 'ok');
    m.request('fetch', 'gone', 'no_upstream');
    m.request('fetch', '-', 'unauthorized');
    expect(await series(m)).toHaveLength(4);
    m.forgetRoutesBut(new Set(['keep']));
    expect(await series(m)).toEqual([
      'gateway_requests_total{listener="proxy",route="keep",outcome="ok"} 1',
      'gateway_requests_total{listener="fetch",route="-",outcome="unauthorized"} 1',
    ]);
    // A route that comes back starts a new series.
    m.request('fetch', 'gone', 'ok');
    expect(await series(m)).toContain('gateway_requests_total{listener="fetch",route="gone",outcome="ok"} 1');
  });

  it("keeps their counts in the traffic line's totals: no delta lost, none negative", () => {
    const m = recorder();
    m.request('proxy', 'keep', 'ok');
    const prev = totals(m);
    m.request('fetch', 'gone', 'ok');
    m.request('fetch', 'gone', 'no_upstream');
    m.forgetRoutesBut(new Set(['keep']));
    m.request('proxy', 'keep', 'ok');
    const d = trafficDelta(prev, totals(m));
    expect(d.requests).toBe(3);
    expect(d.outcomes.ok).toBe(2);
    expect(d.outcomes.noUpstream).toBe(1);
    // The route is gone: named by no line, and its earlier counts are no new no_upstream either.
    expect(d.noUpstreamRoutes).toEqual({});
    const next = totals(m);
    m.forgetRoutesBut(new Set());
    expect(trafficDelta(next, totals(m))).toMatchObject({ requests: 0, noUpstreamRoutes: {} });
  });
});
