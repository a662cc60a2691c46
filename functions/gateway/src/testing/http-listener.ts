// The HTTP listener as the unit tests serve it: a worker's listener with an idle metrics source, a guard
// that resolves every name to a public address, no kept-alive upstream connections. `opts` overrides any
// dependency (auth, log, the limits).
import { parseAllowList } from '../../../../shared/src/domain/gateway/ssrf.js';
import { ClientAuth } from '../client-auth.js';
import { createHttpListener, type HttpAppDeps } from '../http-app.js';
import { jsonLogger } from '../logger.js';
import { PromRecorder } from '../metrics.js';
import { newSocketCounts } from '../sockets.js';
import { TargetGuard } from '../target-guard.js';
import { UpstreamPool } from '../upstream-pool.js';
import type { GatewayWorker } from '../worker.js';

export function testHttpListener(worker: GatewayWorker, opts: Partial<HttpAppDeps> = {}) {
  const sockets = newSocketCounts();
  const metrics = new PromRecorder({
    activeTunnels: () => 0,
    reserved: () => 0,
    openSockets: () => ({ ...sockets }),
    snapshotAgeSeconds: () => null,
    snapshotVersion: () => null,
    accepting: () => worker.accepting,
    outcomeQueueSize: () => 0,
    suspectUpstreams: () => null,
    suspectFallbacks: () => 0,
  });
  return createHttpListener({
    worker,
    guard: new TargetGuard(parseAllowList([]).allow, async () => ['8.8.8.8'], {
      ttlMs: 0,
      maxEntries: 1,
      now: Date.now,
    }),
    recorder: metrics,
    metrics,
    sockets,
    auth: new ClientAuth([{ username: 'c', password: 's' }], ['tok']),
    log: jsonLogger('error', () => {}),
    upstreamTimeoutMs: 1000,
    pool: new UpstreamPool(sockets, { idleMs: 0, maxIdlePerUpstream: 0 }),
    maxTimeoutMs: 1000,
    maxBodyBytes: 1024,
    maxResponseBytes: 1024,
    version: 't',
    ...opts,
  });
}
