// A fleet for probe tests: real instances on the Compute emulator (real forward proxies on 127.0.0.N),
// their proxy documents in Firestore with the status reconcile would have written, an echo endpoint and a
// target site — and the probe handler wired to the real Firestore stores and the real probe I/O. Each
// published request is answered as reconcile answers a health transition: the stored verdict is folded
// into status (the real reconcile domain), so the probe sees the statuses it compares its verdicts with.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Firestore } from '@google-cloud/firestore';
import { serve } from '@hono/node-server';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { echoRoutes } from '../../functions/api/src/echo/echo-routes.js';
import { handleProbeTick, type ProbeHandlerDeps } from '../../functions/probe/src/handler.js';
import { logProbeRecorder } from '../../functions/probe/src/probe-recorder.js';
import { storeHealthSource } from '../../functions/reconcile/src/health-source.js';
import { FirestoreHealthStore } from '../../shared/src/adapters/firestore/health-store.js';
import { FirestoreJobRunStore } from '../../shared/src/adapters/firestore/job-run-store.js';
import { FirestorePassiveFeedStore } from '../../shared/src/adapters/firestore/passive-feed-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreRoutingStore } from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { FirestoreOutcomeReader } from '../../shared/src/adapters/firestore/worker-outcome-store.js';
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import {
  fetchDirect,
  handshakeThroughProxy,
  probeThroughProxy,
} from '../../shared/src/adapters/probe/proxy-probe.js';
import { healthInstanceKey } from '../../shared/src/domain/health/instance-key.js';
import {
  DEFAULT_PASSIVE_SETTINGS,
  type PassiveSettings,
} from '../../shared/src/domain/health/passive-track.js';
import { type ExternalSpec, type ProxyResource, ProxySpec } from '../../shared/src/domain/proxy.js';
import { applyHealth, verdictFor } from '../../shared/src/domain/reconcile/conditions.js';
import { reconcileExternal } from '../../shared/src/domain/reconcile/external.js';
import { finalizeStatus, statusChanged } from '../../shared/src/domain/reconcile/patch-status.js';
import type { Plan } from '../../shared/src/domain/reconcile/types.js';
import { DEFAULT_PASSIVE_RULE } from '../../shared/src/domain/workers/passive.js';
import type { ReconcileRequest } from '../../shared/src/messages/reconcile-request.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { provisionedProxy } from './provisioned-proxy.js';

export interface ProbeFleet {
  db: Firestore;
  compute: ComputeEmulator;
  proxies: FirestoreProxyStore;
  health: FirestoreHealthStore;
  clock: ManualClock;
  /** The requests published (and answered) so far; a failed publish is not recorded. */
  published: ReconcileRequest[];
  /** `publish`: how many of the next publishes fail (a Pub/Sub error) before they go through again. */
  faults: { publish: number };
  log: ReturnType<typeof memoryLogger>;
  /** The site health-check URLs point at; `delayMs` makes it answer slowly. */
  target: { url: string; delayMs: number };
  echoUrl: string;
  /** `down`: the echo endpoint answers 503 to every request (the API down or redeploying). */
  echo: { down: boolean };
  project: string;
  /** `uid`: the proxy's (its probe slots are a function of it: due.ts); a random one by default. */
  add(
    name: string,
    spec?: Record<string, unknown>,
    uid?: string,
  ): Promise<{ proxy: ProxyResource; zone: string; instance: string }>;
  /** An external proxy whose endpoint is a real forward proxy (an instance nothing reconciles). */
  addExternal(name: string): Promise<{ proxy: ProxyResource; zone: string; instance: string }>;
  tick(advanceMs?: number): ReturnType<typeof handleProbeTick>;
  /** The handler's dependencies, for tests that drive one of its passes directly. */
  deps: ProbeHandlerDeps;
  stop(): Promise<void>;
}

const listen = (server: Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );

/**
 * The fleet's probe timeout: no test here relies on a probe timing out (a dead proxy refuses at once), and
 * 2 s was missed by concurrent probes on a loaded two-core machine — each miss a failure written, a
 * verdict late (health-steady-fleet saw 34 of 50 without their first verdicts).
 */
const PROBE_TIMEOUT_SECONDS = 20;

export async function startProbeFleet(
  projectId: string,
  opts: {
    echo?: boolean;
    passive?: Partial<PassiveSettings>;
    /** The tick period (default 1 s): the handler's, tick()'s default step, and — as production's
     *  wiring passes it (functions/probe/src/wiring.ts) — the passive track's, which counts its expiry in
     *  ticks. `passive.tickPeriodMs` overrides the last alone. */
    tickPeriodMs?: number;
  } = {},
): Promise<ProbeFleet> {
  const tickPeriodMs = opts.tickPeriodMs ?? 1000;
  const db = new Firestore({ projectId });
  const compute = await startComputeEmulator({ bootDelayMs: 20, deleteDelayMs: 20 });
  const gce = makeGceProvider({ project: projectId, computeEndpoint: compute.endpoint });
  const target = { url: '', delayMs: 0 };
  const site = createServer((_req, res) => {
    setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), target.delayMs);
  });
  target.url = `http://127.0.0.1:${await listen(site)}/`;
  const echoState = { down: false };
  const echoApp = echoRoutes({ trustedHops: 0 });
  const echo = serve({
    fetch: (req, env) =>
      echoState.down ? new Response('unavailable', { status: 503 }) : echoApp.fetch(req, env),
    port: 0,
    hostname: '127.0.0.1',
  });
  await new Promise<void>((r) => echo.once('listening', () => r()));
  const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/v1/echo`;
  const proxies = new FirestoreProxyStore(db);
  const health = new FirestoreHealthStore(db);
  const clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
  const published: ReconcileRequest[] = [];
  const faults = { publish: 0 };
  const healthSource = storeHealthSource(health);
  // Reconcile's answer to a health transition: the Running arm's fold for a managed proxy (its instance is
  // unchanged here), reconcileExternal for an external one, then the one conditional status write.
  const answer = async (name: string): Promise<void> => {
    const stored = await proxies.get(name);
    if (!stored) return;
    const { proxy } = stored;
    const now = clock.now();
    const obs = await healthSource.verdictFor(proxy);
    const plan: Pick<Plan, 'status' | 'requeue'> =
      proxy.spec.mode === 'external'
        ? reconcileExternal(proxy as ProxyResource & { spec: ExternalSpec }, {
            now,
            providerRegistered: true,
            cloudInit: null,
            instance: null,
            health: obs,
          })
        : {
            status: applyHealth(
              proxy.status,
              verdictFor(obs, healthInstanceKey(proxy)),
              proxy.generation,
              now,
            ),
            requeue: { kind: 'drift' },
          };
    const next = finalizeStatus(proxy, plan.status, plan.requeue, now);
    if (statusChanged(proxy.status, next)) await proxies.writeStatus(name, next, stored.version);
  };
  const log = memoryLogger();
  const deps: ProbeHandlerDeps = {
    proxies,
    routing: new FirestoreRoutingStore(db),
    health,
    jobs: new FirestoreJobRunStore(db),
    publisher: {
      publish: async (r) => {
        if (faults.publish > 0) {
          faults.publish--;
          throw new Error('injected: Pub/Sub publish failed');
        }
        published.push(r);
        if (r.reason === 'health-transition') await answer(r.proxy);
      },
    },
    secrets: { access: async () => 'unused:unused' },
    prober: { probe: probeThroughProxy, handshake: handshakeThroughProxy, direct: fetchDirect },
    log,
    recorder: logProbeRecorder(log),
    tiers: {
      echoUrl: opts.echo === false ? null : echoUrl,
      callerIps: ['127.0.0.1'],
      rejectUnauthorized: false,
    },
    concurrency: 32,
    // The real passive feed: gateway outcome batches in this project's workerOutcomes collection.
    passive: {
      outcomes: new FirestoreOutcomeReader(db),
      feed: new FirestorePassiveFeedStore(db),
      settings: { ...DEFAULT_PASSIVE_SETTINGS, expiryMs: 3000, tickPeriodMs, ...opts.passive },
      rule: DEFAULT_PASSIVE_RULE,
      settleMs: 0,
    },
    clock,
    sleep: async () => {},
    tickPeriodMs,
    loopMs: 0,
  };

  /** A real forward proxy on a Compute emulator instance, Running. */
  async function runInstance(
    name: string,
    parsed: ProxySpec & { mode: 'managed' },
    uid: string = randomUUID(),
  ) {
    const instance = `pp-${uid.replaceAll('-', '').slice(0, 20)}`;
    const { providerId } = await gce.provider.create({
      name: instance,
      proxyName: name,
      uid,
      zone: parsed.zone,
      machineType: parsed.machineType,
      image: parsed.image,
      port: parsed.port,
      protocol: parsed.protocol,
      startupScript: '#!/bin/bash\ntrue\n',
      credentialsSecret: null,
      specHash: 'h',
    });
    let ip: string | null = null;
    for (let i = 0; i < 200 && !ip; i++) {
      const seen = await gce.provider.get(providerId);
      ip = seen?.state === 'Running' ? seen.ip : null;
      if (!ip) await new Promise((r) => setTimeout(r, 20));
    }
    if (!ip) throw new Error(`instance ${instance} never ran`);
    return { uid, instance, providerId, ip };
  }

  return {
    db,
    compute,
    proxies,
    health,
    clock,
    published,
    faults,
    log,
    target,
    echoUrl,
    echo: echoState,
    project: projectId,
    deps,
    async add(name, spec = {}, uid) {
      const parsed = ProxySpec.parse({
        mode: 'managed',
        zone: 'us-central1-a',
        healthCheck: {
          url: target.url,
          intervalSeconds: 1,
          timeoutSeconds: PROBE_TIMEOUT_SECONDS,
          successThreshold: 2,
          failureThreshold: 2,
        },
        ...spec,
      });
      if (parsed.mode !== 'managed') throw new Error('managed only');
      const run = await runInstance(name, parsed, uid);
      const { instance, providerId, ip } = run;
      const proxy = provisionedProxy({ name, uid: run.uid, spec: parsed, now: clock.now(), ip, providerId });
      await proxies.create(proxy);
      return { proxy, zone: parsed.zone, instance };
    },
    async addExternal(name) {
      const managed = ProxySpec.parse({ mode: 'managed', zone: 'us-central1-a' });
      if (managed.mode !== 'managed') throw new Error('managed only');
      const { uid, instance, ip } = await runInstance(name, managed);
      const spec = ProxySpec.parse({
        mode: 'external',
        endpoint: { host: ip, port: managed.port },
        healthCheck: {
          url: target.url,
          intervalSeconds: 1,
          timeoutSeconds: PROBE_TIMEOUT_SECONDS,
          successThreshold: 2,
          failureThreshold: 2,
        },
      });
      const proxy = provisionedProxy({ name, uid, spec, now: clock.now(), ip });
      await proxies.create(proxy);
      return { proxy, zone: managed.zone, instance };
    },
    tick(advanceMs = tickPeriodMs) {
      clock.advance(advanceMs);
      return handleProbeTick(deps);
    },
    async stop() {
      await gce.close();
      await compute.stop();
      await new Promise((r) => site.close(r));
      await new Promise((r) => echo.close(r));
      await db.terminate();
    },
  };
}
