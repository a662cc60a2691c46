// The composition root of `npm start`: brings the plane up on the firebase.json ports (shifted by the
// port offset) in dependency order, registering every started piece with the Teardown as it comes up,
// so that Ctrl-C at any moment stops exactly what runs.
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { PubSubPublisher } from '../../shared/src/adapters/pubsub/publisher.js';
import { ensurePubSubTopology } from '../../shared/src/adapters/pubsub/topology.js';
import { hostPort } from '../../shared/src/config/local-ports.js';
import { loadPubSubTable, loadScheduleTable } from '../../shared/src/config/topology.js';
import { DEFAULT_PROXY_PORT } from '../compute/instance-spec.js';
import { jsonLineLog } from '../compute/log.js';
import { demoCertificate } from '../demo-target/certificate.js';
import { startGoogleEmulators } from '../launcher/google-emulators.js';
import { localApiEnv, localFunctionEnv } from './function-env.js';
import { hostFunctions } from './functions.js';
import { gatewayExtraCaEnv } from './gateway-trust.js';
import { planeLayout } from './layout.js';
import { apiCredentialEnv, loadLocalTokens, planeWorkerTokens } from './local-tokens.js';
import { appendLines } from './log-file.js';
import type { PlaneOptions } from './options.js';
import { DEFAULT_STATE_DIR } from './options.js';
import { startOurEmulators } from './our-emulators.js';
import { assertNotHeldOnWildcard, assertPortsFree } from './ports.js';
import type { Endpoint } from './report.js';
import { startApi, startGatewayService, startScheduler } from './services.js';
import { claimStateDir } from './state-dir.js';
import { assertStateDirFree, stateFileIn, writePlaneState } from './state-file.js';
import { Layer, type Teardown } from './teardown.js';
import { startTtlSweeper } from './ttl-sweeper.js';

/** The local TTL sweep's period, and how long past its expireAt a document stays (deployed: up to 24 h). */
const TTL_SWEEP_EVERY_MS = 60_000;
const TTL_GRACE_MS = 10 * 60_000;

export interface RunningPlane {
  endpoints: Endpoint[];
  notBuilt: string[];
  /** What a developer exports to reach the plane (emulator hosts, project, API URL and tokens). */
  exports: Record<string, string>;
  logDir: string;
}

export class StartCancelled extends Error {
  readonly kind = 'cancelled';
}

export async function startPlane(
  opts: PlaneOptions,
  { progress, teardown }: { progress: (line: string) => void; teardown: Teardown },
): Promise<RunningPlane> {
  const checkpoint = () => {
    if (teardown.stopping) throw new StartCancelled('start cancelled');
  };
  const { ports, inventory, functionPort, claims } = planeLayout(opts.portOffset);
  // One plane per state dir (logs, certificate, gateway files, state.json): asked first, so that a second
  // `npm start` beside a running one is told at once that a plane runs there and what to set for a second
  // (both a state dir and an offset), not a line per taken port and only half the advice.
  claimStateDir(opts.stateDir, DEFAULT_STATE_DIR);
  const stateFile = stateFileIn(opts.stateDir);
  assertStateDirFree(stateFile);
  progress('checking ports');
  await assertPortsFree(claims);
  await assertNotHeldOnWildcard(DEFAULT_PROXY_PORT);
  // Claimed before the logs of whichever plane had the dir are cleared below — asked again first: the port
  // checks took a while, and a plane started beside this one meanwhile may have claimed it.
  assertStateDirFree(stateFile);
  writePlaneState(stateFile, { pid: process.pid, projectId: opts.projectId, portOffset: opts.portOffset });

  const logDir = join(opts.stateDir, 'logs');
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });

  const warnOnExit = (name: string, exited: Promise<{ code: number | null }>, log: string) =>
    exited.then(({ code }) => {
      if (!teardown.stopping) progress(`${name} exited unexpectedly (code ${code}); see ${log}`);
    });

  progress('starting the Firestore and Pub/Sub emulators');
  const emus = await startGoogleEmulators({
    firestore: ports.firestore,
    pubsub: ports.pubsub,
    projectId: opts.projectId,
    logDir,
    signal: teardown.signal,
  });
  teardown.add('Firestore and Pub/Sub emulators', emus.stop, Layer.googleEmulators);
  for (const e of emus.exits) void warnOnExit(`${e.name} emulator`, e.exited, join(logDir, `${e.name}.log`));
  progress('Firestore and Pub/Sub emulators up');
  checkpoint();

  const apiUrl = `http://${hostPort(ports.api)}`;
  const env: Record<string, string> = {
    ...emus.env,
    COMPUTE_EMULATOR_HOST: hostPort(ports.compute),
    SECRET_MANAGER_EMULATOR_HOST: hostPort(ports.secretmanager),
    SCHEDULER_EMULATOR_HOST: hostPort(ports.scheduler),
  };
  const tokens = loadLocalTokens(opts.stateDir);
  const apiCredentials = apiCredentialEnv(tokens, process.env);
  // The gateway worker's identity toward the API, and the credentials crawlers use with the gateway: made
  // per start (both ends are started here). Worker identities the developer configured (WORKER_TOKENS for a
  // gateway of their own beside this one, GATEWAY_SERVICE_ACCOUNT) are kept, gw-local's token added to
  // them — unless they name gw-local themselves: this gateway then gets the token their entry gives.
  const gatewayWorker = { id: 'gw-local', token: randomBytes(24).toString('base64url') };
  const gatewayClient = { user: 'gateway', pass: randomBytes(12).toString('base64url') };
  const workerTokens = planeWorkerTokens(process.env.WORKER_TOKENS, gatewayWorker);
  if (workerTokens.api) apiCredentials.WORKER_TOKENS = workerTokens.api;
  const functionEnv = {
    ...env,
    ...localFunctionEnv({ apiUrl, speed: opts.speed, schedules: loadScheduleTable(), env: process.env }),
  };
  const urls = new Map<string, string>();
  const notBuilt: string[] = [];
  const pubsub = createPubSub(opts.projectId, env.PUBSUB_EMULATOR_HOST);
  teardown.add('Pub/Sub client', () => pubsub.close(), Layer.clients);

  // Firestore's TTL policies, which its emulator does not run (ttl-sweeper.ts). The client takes its
  // emulator from FIRESTORE_EMULATOR_HOST over any host it is given, and a shell that exported another
  // plane's would point it there: this process is the plane's, so its own emulator goes there first.
  process.env.FIRESTORE_EMULATOR_HOST = env.FIRESTORE_EMULATOR_HOST;
  const db = new Firestore({ projectId: opts.projectId, host: env.FIRESTORE_EMULATOR_HOST, ssl: false });
  const ttlLog = jsonLineLog('ttl-sweeper', appendLines(join(logDir, 'ttl-sweeper.log')));
  const ttl = startTtlSweeper({
    db,
    everyMs: TTL_SWEEP_EVERY_MS,
    graceMs: TTL_GRACE_MS,
    onError: (err) =>
      ttlLog('WARNING', `TTL sweep failed: ${err instanceof Error ? err.message : String(err)}`),
  });
  teardown.add(
    'Firestore TTL sweeper',
    async () => {
      await ttl.stop();
      await db.terminate();
    },
    Layer.clients,
  );

  const topology = ensurePubSubTopology(pubsub, loadPubSubTable(), {
    projectId: opts.projectId,
    local: true,
    pushEndpointFor: (name) =>
      inventory.built.some((fn) => fn.name === name)
        ? `http://${ports.functions.host}:${functionPort(name)}`
        : undefined,
  }).then((plan) => {
    const pushes = plan.subscriptions.filter((s) => s.pushEndpoint).length;
    progress(`Pub/Sub topology: ${plan.topics.length} topics, ${pushes} push subscriptions`);
  });

  // Secret Manager publishes its notifications to a topic of the table: create the topics first.
  const ours = topology.then(() =>
    startOurEmulators({
      compute: ports.compute,
      secretmanager: ports.secretmanager,
      projectId: opts.projectId,
      pubsub,
      logDir,
      apiPort: ports.api.port,
      onUp: (name, url, stop) => {
        teardown.add(name, stop, Layer.ourEmulators);
        urls.set(name, url);
        progress(`${name} up at ${url}`);
      },
    }),
  );

  for (const m of inventory.missing) {
    progress(`function ${m.name}: not built yet`);
    notBuilt.push(`function ${m.name} (${m.entry.slice(m.entry.indexOf('functions/'))})`);
  }
  const functions = hostFunctions(inventory.built, {
    portFor: functionPort,
    host: ports.functions.host,
    env: functionEnv,
    logDir,
    // Registered at spawn, not when ready: a Ctrl-C while a function loads must stop it too.
    onSpawn: (name, stop) => teardown.add(`function ${name}`, stop, Layer.services),
    onUp: (fn) => {
      progress(`function ${fn.name} up at ${fn.url}`);
      void warnOnExit(`function ${fn.name}`, fn.exited, join(logDir, `function-${fn.name}.log`));
    },
  });

  const api = startApi({
    ...ports.api,
    env: { ...env, ...apiCredentials, ...localApiEnv(functionEnv) },
    logDir,
    onSpawn: (stop) => teardown.add('api', stop, Layer.services),
  }).then((svc) => {
    progress(`api up at ${svc.url}`);
    void warnOnExit('api', svc.exited, join(logDir, 'api.log'));
    return svc;
  });

  const settled = await Promise.allSettled([topology, ours, functions, api]);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  checkpoint();

  const scheduler = await startScheduler({
    ...ports.scheduler,
    projectId: opts.projectId,
    location: process.env.REGION || 'us-central1',
    speed: opts.speed,
    publisher: new PubSubPublisher(pubsub),
    logFile: join(logDir, 'scheduler.log'),
  });
  teardown.add('scheduler', scheduler.stop, Layer.scheduler);
  progress(`scheduler up at ${scheduler.url} (${scheduler.jobs} jobs, speed ${opts.speed})`);

  // The demo site's certificate is made (or found) before the gateway starts, which reads its extra CAs
  // only then: /v1/fetch verifies the HTTPS demo site as it would a real one. The demo step reuses it, and
  // reports a failure to make one itself (the demo is a convenience: the plane starts without it).
  const demoCert = opts.demo
    ? await demoCertificate(join(opts.stateDir, 'demo-target'), new Date()).catch(() => null)
    : null;
  const gatewayCa = await gatewayExtraCaEnv({
    demoCertPath: demoCert?.certPath,
    env: process.env,
    dir: join(opts.stateDir, 'gateway'),
  });

  const gateway = await startGatewayService({
    ...ports.gateway,
    env: {
      ...gatewayCa,
      ...env,
      GOOGLE_CLOUD_PROJECT: opts.projectId,
      METADATA_SERVER_DETECTION: 'none',
      CONTROL_PLANE_URL: apiUrl,
      GATEWAY_WORKER_ID: gatewayWorker.id,
      ...(workerTokens.gateway ? { GATEWAY_WORKER_TOKEN: workerTokens.gateway } : {}),
      GATEWAY_CLIENT_USERS: `${gatewayClient.user}:${gatewayClient.pass}`,
      // The demo site is on loopback, which the SSRF guard refuses unless allowed by name.
      GATEWAY_SSRF_ALLOW: `${hostPort(ports.demoTarget)},${ports.demoTarget.host}:${ports.demoTarget.tlsPort}`,
      GATEWAY_START_WAIT_SECONDS: '3',
      // Its proxy listener on the plane's loopback address (startGatewayService sets HOST), whatever the
      // shell exported for a gateway of its own: inherited, `0.0.0.0` put it on every interface.
      GATEWAY_PROXY_HOST: ports.gateway.host,
    },
    logDir,
    // Before the API: its shutdown reports (draining, then final) go to the API.
    onSpawn: (stop) => teardown.add('gateway', stop, Layer.gateway),
  });
  progress(`gateway up at ${gateway.url} (proxy port ${ports.gateway.proxyPort})`);
  void warnOnExit('gateway', gateway.exited, join(logDir, 'gateway.log'));

  const endpoints: Endpoint[] = [
    { name: 'firestore', url: `http://${hostPort(ports.firestore)}` },
    { name: 'pubsub', url: `http://${hostPort(ports.pubsub)}` },
    { name: 'compute', url: urls.get('compute emulator')! },
    { name: 'secretmanager', url: urls.get('secret manager emulator')! },
    { name: 'scheduler', url: scheduler.url },
    { name: 'api', url: (await api).url },
    { name: 'gateway', url: gateway.url },
    {
      name: 'gateway-proxy',
      url: `http://${hostPort({ host: ports.gateway.host, port: ports.gateway.proxyPort })}`,
    },
    ...(await functions).map((fn) => ({ name: `function:${fn.name}`, url: fn.url })),
  ];
  const exports: Record<string, string> = { ...env, PROXYPLANE_API_URL: apiUrl };
  // Only the tokens the plane made: a developer's own credentials stay where they set them.
  if (apiCredentials.ADMIN_TOKENS) exports.PROXYPLANE_ADMIN_TOKEN = tokens.admin;
  if (apiCredentials.DISCOVERY_TOKENS) exports.PROXYPLANE_CRAWLER_TOKEN = tokens.crawler;
  // The gateway's HTTP listener (/v1/fetch, /healthz, /metrics): moves with PROXYPLANE_PORT_OFFSET.
  exports.PROXYPLANE_GATEWAY_URL = gateway.url;
  exports.PROXYPLANE_GATEWAY_PROXY_URL = `http://${gatewayClient.user}:${gatewayClient.pass}@${hostPort({ host: ports.gateway.host, port: ports.gateway.proxyPort })}`;
  return { endpoints, notBuilt, exports, logDir };
}
