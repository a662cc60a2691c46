// The control plane a gateway worker runs against in tests, on the test's own project: the API in this
// process (the real app with its worker endpoints, worker tokens and an admin token), the snapshot
// function (and reconcile, when asked) as real functions-framework processes behind Pub/Sub pushes, our
// Secret Manager emulator (upstream credentials), optionally the Compute emulator (real proxy VMs), and
// the gateway itself as its own process in controller mode. killControlPlane() stops the API, the
// functions and the ticking, and leaves the emulators and the gateway running.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import {
  type GatewayProcess,
  type StartingGateway,
  spawnGateway,
  spawnGatewayUntil,
} from '../../bench/support/gateway-process.js';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { freePort } from '../../emulators/launcher/free-port.js';
import {
  type SecretManagerEmulator,
  startSecretManagerEmulator,
} from '../../emulators/secret-manager/server.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { SnapshotJob } from '../../functions/snapshot/src/job-run.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { Tick } from '../../shared/src/messages/tick.js';
import { SNAPSHOT_REQUESTS_TOPIC } from '../../shared/src/messages/worker-snapshot-request.js';
import { workersApiDeps } from './admin-api.js';
import { startTestPlane, type TestPlane } from './local-plane.js';
import { pollUntil } from './poll.js';
import { type PacedTicks, startPacedTicks } from './snapshot-ticker.js';

export const GATEWAY_ADMIN_TOKEN = 'gateway-test-admin-token-0123456789';
export const gatewayWorkerToken = (workerId: string) => `gateway-worker-${workerId}-0123456789`;
export const CRAWLER = { user: 'crawler', pass: 'crawler-secret' };

export interface GatewayPlaneOptions {
  projectId: string;
  workerIds: string[];
  /** Functions besides `snapshot` (e.g. reconcile). */
  functions?: string[];
  /** false: no snapshot function, so no pass ever runs and a worker never gets a snapshot. */
  snapshotFunction?: boolean;
  /** Start the Compute emulator, handing out these loopback addresses. */
  compute?: { first: string; last: string };
  /** Settings for the API and the functions (WORKER_*, OWNERSHIP_*, RECONCILE_*…). */
  env?: Record<string, string>;
  /** Run the local scheduler (requeue and probe ticks every 2 s, snapshot every 5 s). */
  scheduler?: boolean;
}

export interface GatewayPlane {
  projectId: string;
  apiUrl: string;
  plane: TestPlane;
  firestore: Firestore;
  proxies: FirestoreProxyStore;
  secrets: SecretManagerEmulator;
  compute: ComputeEmulator | null;
  addSecret(name: string, value: string): Promise<void>;
  admin<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
  tick(): Promise<void>;
  startTicking(everyMs: number): void;
  /** The gateway in controller mode as its own process (env overrides the defaults). */
  gateway(workerId: string, env?: Record<string, string>): Promise<GatewayProcess>;
  /** The same, resolved at its first log line with `message` (it may not be listening yet). */
  gatewayUntil(
    workerId: string,
    message: string,
    env?: Record<string, string>,
  ): Promise<StartingGateway & { line: Record<string, unknown> }>;
  killControlPlane(): Promise<void>;
  stop(): Promise<void>;
}

export async function startGatewayPlane(o: GatewayPlaneOptions): Promise<GatewayPlane> {
  const secrets = await startSecretManagerEmulator({ log: () => {} });
  const smEndpoint = `${secrets.host}:${secrets.port}`;
  const sm = createSecretManagerClient(smEndpoint);
  const compute = o.compute
    ? await startComputeEmulator({
        bootDelayMs: 200,
        deleteDelayMs: 200,
        addressRange: o.compute,
        secretManagerEndpoint: smEndpoint,
        log: () => {},
      })
    : null;
  // The API's port is chosen first: the probe function's EGRESS tier needs its /v1/echo URL at start.
  const apiPort = await freePort();
  const env: Record<string, string> = {
    SECRET_MANAGER_EMULATOR_HOST: smEndpoint,
    PROBE_ECHO_URL: `http://127.0.0.1:${apiPort}/v1/echo`,
    PROBE_CALLER_IPS: '127.0.0.1',
    ...(compute ? { COMPUTE_EMULATOR_HOST: compute.endpoint } : {}),
    ...o.env,
  };
  const plane = await startTestPlane({
    projectId: o.projectId,
    functions: [...(o.snapshotFunction === false ? [] : ['snapshot']), ...(o.functions ?? [])],
    env,
    ...(o.scheduler ? { scheduler: { start: true } } : {}),
  });
  const firestore = new Firestore({ projectId: o.projectId });
  const proxies = new FirestoreProxyStore(firestore);
  let api: ApiServer | null = await startApiServer({
    port: apiPort,
    deps: {
      echo: { trustedHops: 0 },
      ...workersApiDeps({
        plane,
        projectId: o.projectId,
        firestore,
        store: proxies,
        env,
        adminToken: GATEWAY_ADMIN_TOKEN,
        workerTokens: o.workerIds.map((workerId) => ({ workerId, token: gatewayWorkerToken(workerId) })),
      }),
    },
  });
  const apiUrl = api.url;
  const gateways: StartingGateway[] = [];
  let ticker: PacedTicks | null = null;
  let planeUp = true;
  const gatewayEnv = (workerId: string, extra: Record<string, string>) => ({
    CONTROL_PLANE_URL: apiUrl,
    GOOGLE_CLOUD_PROJECT: o.projectId,
    PUBSUB_EMULATOR_HOST: plane.env.PUBSUB_EMULATOR_HOST!,
    SECRET_MANAGER_EMULATOR_HOST: smEndpoint,
    METADATA_SERVER_DETECTION: 'none',
    GATEWAY_WORKER_ID: workerId,
    GATEWAY_WORKER_TOKEN: gatewayWorkerToken(workerId),
    GATEWAY_CLIENT_USERS: `${CRAWLER.user}:${CRAWLER.pass}`,
    ...extra,
  });
  const tick = async () => {
    if (planeUp) await plane.publisher.publish(SNAPSHOT_REQUESTS_TOPIC, Tick, { job: SnapshotJob });
  };
  const killControlPlane = async () => {
    await ticker?.stop();
    ticker = null;
    await api?.close();
    api = null;
    if (planeUp) {
      planeUp = false;
      await plane.stop();
    }
  };

  return {
    projectId: o.projectId,
    apiUrl,
    plane,
    firestore,
    proxies,
    secrets,
    compute,
    async addSecret(name, value) {
      await sm.createSecret({
        parent: `projects/${o.projectId}`,
        secretId: name,
        secret: { replication: { automatic: {} } },
      });
      await sm.addSecretVersion({
        parent: `projects/${o.projectId}/secrets/${name}`,
        payload: { data: Buffer.from(value) },
      });
    },
    async admin<T>(method: string, path: string, body?: unknown) {
      const res = await fetch(`${apiUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${GATEWAY_ADMIN_TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
    },
    tick,
    startTicking(everyMs) {
      void ticker?.stop();
      ticker = startPacedTicks({ firestore, tick, everyMs });
    },
    async gateway(workerId, extra = {}) {
      const gw = await spawnGateway([], gatewayEnv(workerId, extra));
      gateways.push(gw);
      return gw;
    },
    async gatewayUntil(workerId, message, extra = {}) {
      const gw = await spawnGatewayUntil([], gatewayEnv(workerId, extra), message);
      gateways.push(gw);
      return gw;
    },
    killControlPlane,
    async stop() {
      await Promise.allSettled(gateways.map((g) => g.stop()));
      // Beside the function logs (test-artifacts/local-plane/<project>/).
      mkdirSync(plane.logDir, { recursive: true });
      for (const [i, g] of gateways.entries()) {
        writeFileSync(join(plane.logDir, `gateway-${i}.log`), `${g.logs.join('\n')}\n`);
      }
      await killControlPlane();
      await firestore.terminate();
      await sm.close();
      await compute?.stop();
      await secrets.stop();
    },
  };
}

/**
 * Waits for the gateway to serve a snapshot version it was not serving, and returns a time before which
 * that snapshot was certainly not yet taken: when the last /healthz that still showed the old version was
 * sent. The worker swaps a snapshot in before it records it as taken (functions/gateway/src/worker.ts), so
 * staleness counted from the new one cannot start earlier. For lower bounds on when a gateway goes stale.
 */
export async function nextSnapshotTakenAfter(gw: GatewayProcess, timeoutMs = 20_000): Promise<number> {
  let sentAt = Date.now();
  const old = (await gw.health()).snapshot?.version;
  let lastOldAt = sentAt;
  await pollUntil(
    async () => {
      sentAt = Date.now();
      const v = (await gw.health()).snapshot?.version;
      if (v === old) lastOldAt = sentAt;
      return v;
    },
    (v) => v !== undefined && v !== old,
    timeoutMs,
    `a snapshot version other than ${old}`,
  );
  return lastOldAt;
}
