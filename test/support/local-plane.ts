// Brings up parts of the local plane for an integration test, in the test's own project on the
// emulators the global setup started, on free ports (so tests run beside `npm start`):
//
//   const plane = await startTestPlane({ projectId: testProjectId(), functions: ['reconcile'] });
//   await plane.publisher.publish('reconcile-requests', ReconcileRequest, { proxy: 'p1', reason: 'manual' });
//   …
//   await plane.stop();   // in afterAll: stops the function processes and the scheduler
//
// - `functions`: names from shared/topology/functions.json, or a FunctionSource of your own (a fixture
//   under test/fixtures/functions/<x>/src/index.ts); each runs as its own functions-framework process,
//   exactly as `npm start` hosts it, with the emulator env, GOOGLE_CLOUD_PROJECT = projectId and `env`.
// - `table`: the Pub/Sub table to create (default shared/topology/pubsub.json). Every topic and the
//   dead-letter topic are made; a consumer gets its push subscription `<topic>--<consumer>` only when
//   it is among `functions` (a fixture's `name` is its consumer name).
// - `scheduler`: a LocalScheduler over shared/topology/schedules.json, not started (call `fire(job)`),
//   unless `{ start: true, speed }`.
// Function logs go to test-artifacts/local-plane/<projectId>/.
//
// A Compute emulator whose VMs should read their proxy credentials the deployed way — by reference, from
// Secret Manager — is started with `startComputeEmulator({ secretManagerEndpoint })` (emulators/compute).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { PubSub } from '@google-cloud/pubsub';
import {
  type FunctionSource,
  type HostedFunction,
  type HostFunctionOptions,
  hostFunction,
} from '../../emulators/functions-host/host.js';
import { freePort } from '../../emulators/launcher/free-port.js';
import { functionInventory, hostFunctions } from '../../emulators/local-plane/functions.js';
import { jobsFromTable } from '../../emulators/scheduler/jobs.js';
import { LocalScheduler } from '../../emulators/scheduler/local-scheduler.js';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { PubSubPublisher } from '../../shared/src/adapters/pubsub/publisher.js';
import { ensurePubSubTopology } from '../../shared/src/adapters/pubsub/topology.js';
import type { TopologyPlan } from '../../shared/src/adapters/pubsub/topology-plan.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import {
  loadFunctionTable,
  loadPubSubTable,
  loadScheduleTable,
  type PubSubTable,
} from '../../shared/src/config/topology.js';
import { firestoreHost, pubsubHost } from './emulators.js';

export interface TestPlaneOptions {
  projectId: string;
  functions?: Array<string | FunctionSource>;
  table?: PubSubTable;
  scheduler?: boolean | { start?: boolean; speed?: number };
  env?: Record<string, string>;
}

export interface TestPlane {
  projectId: string;
  /** Bound to projectId on the test emulator; closed by stop(). */
  pubsub: PubSub;
  publisher: PubSubPublisher;
  functions: Record<string, HostedFunction>;
  scheduler?: LocalScheduler;
  topology: TopologyPlan;
  /** The env the function processes got (emulator hosts, project, METADATA_SERVER_DETECTION, `env`). */
  env: Record<string, string>;
  logDir: string;
  stop(): Promise<void>;
}

function resolveSources(wanted: Array<string | FunctionSource>): FunctionSource[] {
  const { built, missing } = functionInventory(loadFunctionTable());
  return wanted.map((w) => {
    if (typeof w !== 'string') return w;
    const fn = built.find((b) => b.name === w);
    if (fn) return fn;
    const gap = missing.find((m) => m.name === w);
    throw new Error(
      gap ? `function ${w} is not built yet (${gap.entry})` : `no function ${w} in functions.json`,
    );
  });
}

function planeEnv(projectId: string, extra: Record<string, string> = {}): Record<string, string> {
  const hp = (h: { host: string; port: number }) => `${h.host}:${h.port}`;
  const passThrough = ['COMPUTE_EMULATOR_HOST', 'SECRET_MANAGER_EMULATOR_HOST', 'SCHEDULER_EMULATOR_HOST'];
  return {
    ...Object.fromEntries(passThrough.flatMap((k) => (process.env[k] ? [[k, process.env[k]]] : []))),
    FIRESTORE_EMULATOR_HOST: hp(firestoreHost()),
    PUBSUB_EMULATOR_HOST: hp(pubsubHost()),
    GOOGLE_CLOUD_PROJECT: projectId,
    GCLOUD_PROJECT: projectId,
    PUBSUB_PROJECT_ID: projectId,
    METADATA_SERVER_DETECTION: 'none',
    ...extra,
  };
}

/** Attempts at hosting one function, each on a port found free just before. */
const HOST_ATTEMPTS = 3;

/** hostFunction, started again on another free port when its port was taken before it listened. */
async function onAFreePort(o: HostFunctionOptions): Promise<HostedFunction> {
  for (let attempt = 1; ; attempt++) {
    // The log is appended to: only what this attempt wrote says whether its port was taken.
    const logged = o.logFile && existsSync(o.logFile) ? statSync(o.logFile).size : 0;
    try {
      return await hostFunction(attempt === 1 ? o : { ...o, port: await freePort() });
    } catch (err) {
      if (!logTail(o.logFile, logged).includes('EADDRINUSE') || attempt >= HOST_ATTEMPTS) throw err;
    }
  }
}

/** What `path` holds past its first `from` bytes ('' for none or no file). */
const logTail = (path: string | undefined, from: number): Buffer => {
  try {
    return path ? readFileSync(path).subarray(from) : Buffer.alloc(0);
  } catch {
    return Buffer.alloc(0);
  }
};

export async function startTestPlane(opts: TestPlaneOptions): Promise<TestPlane> {
  const { projectId } = opts;
  const sources = resolveSources(opts.functions ?? []);
  const ports = new Map<string, number>();
  for (const fn of sources) ports.set(fn.name, await freePort());
  const env = planeEnv(projectId, opts.env);
  const logDir = join(repoRoot, 'test-artifacts', 'local-plane', projectId);
  const host = '127.0.0.1';

  const pubsub = createPubSub(projectId, env.PUBSUB_EMULATOR_HOST);
  const publisher = new PubSubPublisher(pubsub);
  let topology: TopologyPlan;
  let hosted: HostedFunction[] = [];
  try {
    // Hosted first, so that the push endpoints name the ports the functions listen on: a free port can be
    // taken by a parallel test file before the function (seconds of loading later) listens on it; such a
    // function fails to start (ready-file.ts) and is started again on another port.
    hosted = await hostFunctions(sources, {
      portFor: (n) => ports.get(n)!,
      host,
      env,
      logDir,
      start: onAFreePort,
    });
    for (const f of hosted) ports.set(f.name, f.port);
    topology = await ensurePubSubTopology(pubsub, opts.table ?? loadPubSubTable(), {
      projectId,
      local: true,
      pushEndpointFor: (name) => (ports.has(name) ? `http://${host}:${ports.get(name)}` : undefined),
    });
  } catch (err) {
    await Promise.all(hosted.map((f) => f.stop()));
    await pubsub.close();
    throw err;
  }

  let scheduler: LocalScheduler | undefined;
  if (opts.scheduler) {
    const speed = typeof opts.scheduler === 'object' ? opts.scheduler.speed : undefined;
    scheduler = new LocalScheduler(jobsFromTable(loadScheduleTable()), publisher, { speed });
    if (typeof opts.scheduler === 'object' && opts.scheduler.start) scheduler.start();
  }

  return {
    projectId,
    pubsub,
    publisher,
    functions: Object.fromEntries(hosted.map((f) => [f.name, f])),
    scheduler,
    topology,
    env,
    logDir,
    async stop() {
      await scheduler?.stop();
      await Promise.all(hosted.map((f) => f.stop()));
      await pubsub.close();
    },
  };
}
