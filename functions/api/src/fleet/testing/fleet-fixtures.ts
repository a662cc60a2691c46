// Fleets for the fleet page's tests: the two managed proxies view-model.unit.test.ts reads (a lease, an
// ended one, cooldowns, a gateway owner), and a populated fleet around them with a proxy in every phase,
// an external SOCKS5 one, a draining owner, a TARGET track and job runs — for tests of the JSON as a whole.
import { healthInstanceKey } from '../../../../../shared/src/domain/health/instance-key.js';
import { emptyStatus, type ProxyResource } from '../../../../../shared/src/domain/proxy.js';
import { InMemoryFleetFeed } from '../feed.js';

/** The harness clock's time (testing/harness.ts). */
export const NOW = new Date('2026-02-01T12:00:00Z');
export const ago = (s: number) => new Date(NOW.getTime() - s * 1000);

export const managed = (name: string): ProxyResource => ({
  name,
  uid: '00000000-0000-4000-8000-000000000001',
  generation: 2,
  createdAt: ago(600),
  deletionRequestedAt: null,
  spec: {
    mode: 'managed',
    provider: 'gce',
    zone: 'us-central1-a',
    machineType: 'e2-small',
    image: 'img',
    port: 3128,
    protocol: 'http',
    attributes: { pool: 'a' },
    capacity: 3,
    gatewayPool: false,
    cordoned: false,
    healthCheck: {
      expectedStatus: 200,
      intervalSeconds: 30,
      timeoutSeconds: 5,
      successThreshold: 1,
      failureThreshold: 3,
    },
  },
  status: {
    ...emptyStatus(),
    phase: 'Ready',
    latencyMillis: 40,
    conditions: [
      {
        type: 'Provisioned',
        status: 'True',
        reason: 'Created',
        message: 'up',
        lastTransitionTime: ago(500),
        observedGeneration: 2,
      },
      {
        type: 'Healthy',
        status: 'True',
        reason: 'ProbeSucceeded',
        message: 'ok',
        lastTransitionTime: ago(400),
        observedGeneration: 2,
      },
    ],
  },
});

/** Proxies a and b: a with health, a live and an expired lease, a running and an ended cooldown, an owner. */
export function twoProxies(f = new InMemoryFleetFeed()): InMemoryFleetFeed {
  const b = managed('b');
  f.proxies.set('b', { ...b, status: { ...b.status, unreachableRoutes: ['shop'] } });
  const a = managed('a');
  // Running (a providerId, Provisioned=True): its health state is about this instance, as the probe keys it.
  f.proxies.set('a', { ...a, status: { ...a.status, providerId: 'us-central1-a/pp-a' } });
  f.health.set('a', {
    proxy: 'a',
    instance: healthInstanceKey(f.proxies.get('a')!),
    tracks: {
      BASIC: { verdict: 'AVAILABLE', consecutiveOk: 1, consecutiveFail: 0 },
      EGRESS: { verdict: 'SUSPECT', consecutiveOk: 0, consecutiveFail: 1 },
    },
    verdict: 'SUSPECT',
    latency: { reportedMs: 40, reportedAt: ago(300) },
    egressProblem: null,
    transitionAt: ago(300),
    latencyHistory: [
      { ms: 90, at: ago(900) },
      { ms: 40, at: ago(300) },
    ],
  });
  f.leaseState.set('a', [
    { leaseId: 'l1', expiresAt: ago(-60), exclusive: false },
    { leaseId: 'l0', expiresAt: ago(1), exclusive: false },
  ]);
  f.cooldowns = [
    {
      proxy: 'a',
      proxyUid: null,
      target: 'shop.example',
      until: ago(-120),
      reason: 'rate_limited',
      leaseId: 'l1',
      reportedAt: ago(10),
    },
    {
      proxy: 'a',
      proxyUid: null,
      target: 'old.example',
      until: ago(5),
      reason: 'banned',
      leaseId: 'l0',
      reportedAt: ago(700),
    },
  ];
  f.ownership.set('a', { owner: 'gw-1', since: 3, drainEpoch: null });
  return f;
}

const uid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/**
 * a and b (Ready), and: c, external SOCKS5, Unhealthy (EGRESS failing, a TARGET track); d, Pending as
 * created; e, Provisioning, owned by a draining gateway worker; f, Deleting, with served credentials; g,
 * Failed (a permanent error) with an exclusive lease. Three job runs: finished, running, failed.
 */
export function populatedFleet(): InMemoryFleetFeed {
  const f = twoProxies();
  const base = managed('x');
  const condition = (type: string, status: 'True' | 'False' | 'Unknown', reason: string, s: number) => ({
    type,
    status,
    reason,
    message: `${reason.toLowerCase()} ${s}s ago`,
    lastTransitionTime: ago(s),
    observedGeneration: 1,
  });
  f.proxies.set('c', {
    ...base,
    name: 'c',
    uid: uid(3),
    generation: 1,
    spec: {
      mode: 'external',
      endpoint: { host: '203.0.113.7', port: 1080, protocol: 'socks5' },
      attributes: { region: 'eu', tier: 'residential' },
      capacity: 2,
      credentialsRef: { secret: 'c-credentials', version: 'latest' },
      gatewayPool: true,
      cordoned: false,
      healthCheck: { ...base.spec.healthCheck, url: 'https://example.com/', exitIp: 'any' },
    },
    status: {
      ...emptyStatus(),
      phase: 'Unhealthy',
      observedGeneration: 1,
      ip: '203.0.113.7',
      latencyMillis: null,
      lastHealthCheckTime: ago(30),
      conditions: [
        condition('Provisioned', 'True', 'ExternalEndpoint', 900),
        condition('Healthy', 'False', 'ProbeFailed', 30),
      ],
      unreachableRoutes: ['shop'],
    },
  });
  f.health.set('c', {
    proxy: 'c',
    instance: healthInstanceKey(f.proxies.get('c')!),
    tracks: {
      BASIC: { verdict: 'AVAILABLE', consecutiveOk: 1, consecutiveFail: 0 },
      EGRESS: { verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: 3 },
      'TARGET:shop': { verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: 3 },
    },
    verdict: 'UNHEALTHY',
    latency: { reportedMs: null, reportedAt: null },
    egressProblem: 'exit_ip_mismatch',
    transitionAt: ago(30),
  });
  f.proxies.set('d', {
    ...base,
    name: 'd',
    uid: uid(4),
    generation: 1,
    createdAt: ago(5),
    status: emptyStatus(),
  });
  f.proxies.set('e', {
    ...base,
    name: 'e',
    uid: uid(5),
    spec: { ...base.spec, gatewayPool: true, attributes: {} },
    status: {
      ...emptyStatus(),
      phase: 'Provisioning',
      observedGeneration: 2,
      providerId: 'us-central1-a/pp-e',
      conditions: [condition('Provisioned', 'Unknown', 'Provisioning', 20)],
      nextReconcileAt: ago(-10),
    },
  });
  f.ownership.set('e', { owner: 'gw-2', since: 2, drainEpoch: 4 });
  f.proxies.set('f', {
    ...base,
    name: 'f',
    uid: uid(6),
    deletionRequestedAt: ago(15),
    spec: { ...base.spec, credentialsRef: { secret: 'f-credentials', version: '3' } },
    status: {
      ...base.status,
      phase: 'Deleting',
      providerId: 'us-central1-a/pp-f',
      ip: '10.0.0.6',
      specHash: 'h-f',
      lastHealthCheckTime: ago(60),
      servedCredentials: { secret: 'f-credentials', version: '2' },
    },
  });
  f.proxies.set('g', {
    ...base,
    name: 'g',
    uid: uid(7),
    status: {
      ...emptyStatus(),
      phase: 'Failed',
      observedGeneration: 2,
      conditions: [condition('Provisioned', 'False', 'PermanentError', 100)],
    },
  });
  f.leaseState.set('g', [{ leaseId: 'lg', expiresAt: ago(-300), exclusive: true, proxyUid: uid(7) }]);
  f.jobRuns = [
    {
      job: 'probe',
      startedAt: ago(3),
      finishedAt: null,
      ok: null,
      counts: {},
      error: null,
      windowStart: null,
    },
    {
      job: 'gc-sweep',
      startedAt: ago(120),
      finishedAt: ago(118),
      ok: true,
      counts: { scanned: 7, deleted: 0 },
      error: null,
    },
    {
      job: 'reconcile-sweep',
      startedAt: ago(60),
      finishedAt: ago(59),
      ok: false,
      counts: { requeued: 1 },
      error: 'firestore unavailable',
      windowStart: ago(120),
    },
  ];
  return f;
}
