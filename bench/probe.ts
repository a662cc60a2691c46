// `npm run bench -- probe [proxies]`: one probe tick over a fleet of N proxies (default 1,000) that are
// real instances of the Compute emulator, run by the probe function as its own functions-framework
// process against the Firestore emulator. Reports the seconds the tick took (first tick: every proxy gets
// its first verdict written; second tick: the steady fleet, nothing written) and the function process's
// peak resident memory. Targets (issue 4): ≤ 20 s for the tick, ≤ 256 MiB resident.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import { serve } from '@hono/node-server';
import pLimit from 'p-limit';
import { startComputeEmulator } from '../emulators/compute/server.js';
import { hostFunction } from '../emulators/functions-host/host.js';
import { freePort } from '../emulators/launcher/free-port.js';
import { startGoogleEmulators } from '../emulators/launcher/google-emulators.js';
import { echoRoutes } from '../functions/api/src/echo/echo-routes.js';
import { FirestoreProxyStore } from '../shared/src/adapters/firestore/proxy-store.js';
import { makeGceProvider } from '../shared/src/adapters/gce/clients.js';
import { createPubSub } from '../shared/src/adapters/pubsub/client.js';
import { ensurePubSubTopology } from '../shared/src/adapters/pubsub/topology.js';
import { repoRoot } from '../shared/src/config/local-ports.js';
import { loadPubSubTable } from '../shared/src/config/topology.js';
import { ProxySpec } from '../shared/src/domain/proxy.js';
import { provisionedProxy } from '../test/support/provisioned-proxy.js';
import { writeResult } from './support/result.js';

const host = '127.0.0.1';
const projectId = 'demo-bench-probe';

function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

async function pushTick(url: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${url}/projects/${projectId}/topics/ticks-probe`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      subscription: `projects/${projectId}/subscriptions/bench`,
      message: {
        data: Buffer.from(JSON.stringify({ job: 'probe-tick' })).toString('base64'),
        messageId: randomUUID(),
        publishTime: new Date().toISOString(),
      },
    }),
    signal: AbortSignal.timeout(300_000),
  });
  await res.body?.cancel();
  if (res.status !== 204) throw new Error(`probe tick answered ${res.status}`);
  return (performance.now() - started) / 1000;
}

export default async function probeBench(args: string[]): Promise<void> {
  const proxies = Number(args[0] ?? 1000);
  const emus = await startGoogleEmulators({
    firestore: { host, port: await freePort() },
    pubsub: { host, port: await freePort() },
    projectId,
  });
  Object.assign(process.env, emus.env);
  const compute = await startComputeEmulator({ bootDelayMs: 200, deleteDelayMs: 10 });
  const gce = makeGceProvider({ project: projectId, computeEndpoint: compute.endpoint });
  const site = createServer((_q, r) => r.writeHead(200).end('ok'));
  await new Promise<void>((r) => site.listen(0, host, () => r()));
  const echo = serve({ fetch: echoRoutes({ trustedHops: 0 }).fetch, port: 0, hostname: host });
  await new Promise<void>((r) => echo.once('listening', () => r()));
  const db = new Firestore({ projectId });
  const store = new FirestoreProxyStore(db);
  let fn: Awaited<ReturnType<typeof hostFunction>> | undefined;
  try {
    console.log(`creating ${proxies} instances on the Compute emulator …`);
    const siteUrl = `http://${host}:${(site.address() as AddressInfo).port}/`;
    const spec = ProxySpec.parse({
      mode: 'managed',
      zone: 'us-central1-a',
      healthCheck: { url: siteUrl, intervalSeconds: 30, timeoutSeconds: 5 },
    });
    if (spec.mode !== 'managed') throw new Error('managed');
    const fleet = Array.from({ length: proxies }, (_, i) => {
      const uid = randomUUID();
      return { i, uid, instance: `pp-${uid.replaceAll('-', '').slice(0, 20)}` };
    });
    // Instances through the real client (the gce provider), readiness from the emulator's own view.
    await pLimit(64).map(fleet, (f) =>
      gce.provider.create({
        name: f.instance,
        proxyName: `bench-${f.i}`,
        uid: f.uid,
        zone: spec.zone,
        machineType: spec.machineType,
        image: spec.image,
        port: spec.port,
        protocol: spec.protocol,
        startupScript: '#!/bin/bash\n',
        credentialsSecret: null,
        specHash: 'h',
      }),
    );
    let running = new Map<string, string>();
    for (let waited = 0; running.size < proxies; waited += 500) {
      if (waited > 300_000) throw new Error(`only ${running.size} of ${proxies} instances ran`);
      await new Promise((r) => setTimeout(r, 500));
      running = new Map(compute.admin.instances({ status: 'RUNNING' }).map((v) => [v.name, v.address]));
    }
    console.log(`  ${running.size} running; writing their proxy documents …`);
    await pLimit(64).map(fleet, (f) =>
      store.create(
        provisionedProxy({
          name: `bench-${f.i}`,
          uid: f.uid,
          spec,
          now: new Date(),
          ip: running.get(f.instance) ?? null,
          providerId: `zones/${spec.zone}/instances/${f.instance}`,
        }),
      ),
    );
    await ensurePubSubTopology(createPubSub(projectId, emus.env.PUBSUB_EMULATOR_HOST), loadPubSubTable(), {
      projectId,
      pushEndpointFor: () => undefined,
      local: true,
    });
    const port = await freePort();
    fn = await hostFunction({
      fn: { name: 'probe', source: 'functions/probe', target: 'probe', timeoutSeconds: 300 },
      port,
      env: {
        ...emus.env,
        GOOGLE_CLOUD_PROJECT: projectId,
        PROBE_ECHO_URL: `http://${host}:${(echo.address() as AddressInfo).port}/v1/echo`,
        PROBE_CALLER_IPS: '127.0.0.1',
        PROBE_TICK_PERIOD_SECONDS: '60',
        LOG_LEVEL: 'warn',
      },
      logFile: join(repoRoot, 'test-artifacts', 'bench', 'probe-function.log'),
    });
    console.log('first tick (every proxy gets its first verdict) …');
    const firstTick = await pushTick(fn.url);
    const afterFirst = peakRssMiB(fn.pid);
    // The job claim refuses a second run within half a period; move its record back instead of waiting.
    await db.doc('jobRuns/probe-tick').update({ startedAt: new Date(Date.now() - 61_000) });
    console.log('second tick (steady fleet) …');
    const secondTick = await pushTick(fn.url);
    const health = await db.collection('health').where('verdict', '==', 'AVAILABLE').count().get();
    writeResult({
      name: 'probe',
      params: {
        proxies,
        tiers: ['BASIC (health-check URL)', 'EGRESS (echo)'],
        concurrency: 64,
        process: 'functions-framework on the esbuild bundle the local plane runs',
      },
      metrics: {
        secondsForTick: Number(firstTick.toFixed(2)),
        secondsForSteadyTick: Number(secondTick.toFixed(2)),
        peakResidentMiB: Number(Math.max(afterFirst, peakRssMiB(fn.pid)).toFixed(1)),
        proxiesAvailable: health.data().count,
      },
      targets: { secondsForTick: { op: '<=', value: 20 }, peakResidentMiB: { op: '<=', value: 256 } },
      notes: [
        'peakResidentMiB is VmHWM of the function process, which runs the function bundled by esbuild as the local plane does (deployed: tsc output, unbundled).',
        'The Compute emulator (hosting every proxy), the Firestore emulator and this driver share the same 2 cores.',
      ],
    });
  } finally {
    await fn?.stop();
    await gce.close();
    await compute.stop();
    site.close();
    echo.close();
    await db.terminate();
    await emus.stop();
  }
}
