// The composition root of `npm start`: brings the plane up on the firebase.json ports (shifted by the
// port offset) in dependency order, registering every started piece with the Teardown as it comes up,
// so that Ctrl-C at any moment stops exactly what runs.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { PubSubPublisher } from '../../shared/src/adapters/pubsub/publisher.js';
import { ensurePubSubTopology } from '../../shared/src/adapters/pubsub/topology.js';
import { hostPort, loadLocalPorts } from '../../shared/src/config/local-ports.js';
import { loadFunctionTable, loadPubSubTable } from '../../shared/src/config/topology.js';
import { startGoogleEmulators } from '../launcher/google-emulators.js';
import { functionInventory, hostFunctions } from './functions.js';
import { isBuilt, loadEmulator, OPTIONAL_EMULATORS } from './optional.js';
import type { PlaneOptions } from './options.js';
import { assertPortsFree, offsetPorts, type PortClaim } from './ports.js';
import type { Endpoint } from './report.js';
import { startApi, startScheduler } from './services.js';
import type { Teardown } from './teardown.js';

export interface RunningPlane {
  endpoints: Endpoint[];
  notBuilt: string[];
  env: Record<string, string>;
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
  const ports = offsetPorts(loadLocalPorts(), opts.portOffset);
  const inventory = functionInventory(loadFunctionTable());
  const functionPort = (name: string): number => {
    const port = ports.functions.ports[name];
    if (port === undefined) throw new Error(`firebase.json has no emulators.functions.ports.${name}`);
    return port;
  };
  const optional = (['compute', 'secretmanager'] as const).map((key) => ({
    key,
    emulator: OPTIONAL_EMULATORS[key],
    built: isBuilt(OPTIONAL_EMULATORS[key]),
  }));

  progress('checking ports');
  const claims: PortClaim[] = [
    { key: 'emulators.firestore.port', ...ports.firestore },
    { key: 'emulators.pubsub.port', ...ports.pubsub },
    ...optional.filter((o) => o.built).map((o) => ({ key: `emulators.${o.key}.port`, ...ports[o.key] })),
    { key: 'emulators.scheduler.port', ...ports.scheduler },
    { key: 'emulators.api.port', ...ports.api },
    ...inventory.built.map((fn) => ({
      key: `emulators.functions.ports.${fn.name}`,
      host: ports.functions.host,
      port: functionPort(fn.name),
    })),
  ];
  await assertPortsFree(claims);

  const logDir = join(opts.stateDir, 'logs');
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });

  progress('starting the Firestore and Pub/Sub emulators');
  const emus = await startGoogleEmulators({
    firestore: ports.firestore,
    pubsub: ports.pubsub,
    projectId: opts.projectId,
    logDir,
  });
  teardown.add('Firestore and Pub/Sub emulators', emus.stop);
  progress('Firestore and Pub/Sub emulators up');
  checkpoint();

  const env: Record<string, string> = { ...emus.env };
  for (const o of optional.filter((x) => x.built)) {
    env[o.key === 'compute' ? 'COMPUTE_EMULATOR_HOST' : 'SECRET_MANAGER_EMULATOR_HOST'] = hostPort(
      ports[o.key],
    );
  }
  env.SCHEDULER_EMULATOR_HOST = hostPort(ports.scheduler);

  const optionalUrls = new Map<string, string>();
  const notBuilt: string[] = [];
  const warnOnExit = (name: string, exited: Promise<{ code: number | null }>, log: string) =>
    exited.then(({ code }) => {
      if (!teardown.stopping) progress(`${name} exited unexpectedly (code ${code}); see ${log}`);
    });

  const pubsub = createPubSub(opts.projectId, env.PUBSUB_EMULATOR_HOST);
  teardown.add('Pub/Sub client', () => pubsub.close());

  const startOptional = optional.map(async ({ key, emulator, built }) => {
    if (!built) {
      progress(`${emulator.name}: not built yet`);
      notBuilt.push(`${emulator.name} (${emulator.module})`);
      return;
    }
    const start = await loadEmulator(emulator);
    const handle = await start({
      ...ports[key],
      projectId: opts.projectId,
      pubsubEmulatorHost: env.PUBSUB_EMULATOR_HOST,
      firestoreEmulatorHost: env.FIRESTORE_EMULATOR_HOST,
      bootDelayMs: 2000,
      logDir,
    });
    teardown.add(emulator.name, () => handle.stop());
    optionalUrls.set(key, handle.url);
    progress(`${emulator.name} up at ${handle.url}`);
  });

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

  for (const m of inventory.missing) {
    progress(`function ${m.name}: not built yet`);
    notBuilt.push(`function ${m.name} (${m.entry.slice(m.entry.indexOf('functions/'))})`);
  }
  const functions = hostFunctions(inventory.built, {
    portFor: functionPort,
    host: ports.functions.host,
    env,
    logDir,
    onUp: (fn) => {
      teardown.add(`function ${fn.name}`, fn.stop);
      progress(`function ${fn.name} up at ${fn.url}`);
      void warnOnExit(`function ${fn.name}`, fn.exited, join(logDir, `function-${fn.name}.log`));
    },
  });

  const api = startApi({ ...ports.api, env, logDir }).then((svc) => {
    teardown.add('api', svc.stop);
    progress(`api up at ${svc.url}`);
    void warnOnExit('api', svc.exited, join(logDir, 'api.log'));
    return svc;
  });

  const settled = await Promise.allSettled([...startOptional, topology, functions, api]);
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
  teardown.add('scheduler', scheduler.stop);
  progress(`scheduler up at ${scheduler.url} (${scheduler.jobs} jobs, speed ${opts.speed})`);

  const endpoints: Endpoint[] = [
    { name: 'firestore', url: `http://${hostPort(ports.firestore)}` },
    { name: 'pubsub', url: `http://${hostPort(ports.pubsub)}` },
    ...optional.flatMap(({ key }) =>
      optionalUrls.has(key) ? [{ name: key, url: optionalUrls.get(key)! }] : [],
    ),
    { name: 'scheduler', url: scheduler.url },
    { name: 'api', url: (await api).url },
    ...(await functions).map((fn) => ({ name: `function:${fn.name}`, url: fn.url })),
  ];
  if (opts.demo) notBuilt.push('demo fleet (a later issue; --no-demo skips it)');
  return { endpoints, notBuilt, env, logDir };
}
