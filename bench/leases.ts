// Lease benchmark: acquire+release pairs per second through one API process (main.ts, real HTTP, real
// Firestore emulator), 50 concurrent clients, beside the emulator's raw single-document commit rate
// measured in the same run with the same concurrency — interleaved repetitions, ratio per repetition
// (../shared/design/benchmarks.md: the emulator's own limit binds, so it is measured and the ratio is
// what is judged). A pair costs two preconditioned batch commits (grant, release), so ~0.5 is the ceiling.
//   npm run bench -- leases [--reps 3] [--duration 10] [--warmup 3] [--conc 50] [--proxies 100] [--capacity 4]

import { parseArgs } from 'node:util';
import { Firestore } from '@google-cloud/firestore';
import { freePort } from '../emulators/launcher/free-port.js';
import { startGoogleEmulators } from '../emulators/launcher/google-emulators.js';
import { proxy } from '../shared/src/domain/leases/fixtures.unit.js';
import { ADMIN_TOKEN, startApiProcess, writeFleet } from '../test/support/leases.js';
import { writeResult } from './support/result.js';

const TOKEN = 'bench-crawler-token-0123456789';

const quantile = (sorted: number[], q: number): number | null =>
  sorted.length === 0 ? null : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? null);
const median = (xs: number[]): number | null =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

/** `conc` workers run `op` until the deadline; returns completed operations and each one's latency (ms). */
async function closedLoop(conc: number, seconds: number, op: (worker: number, i: number) => Promise<void>) {
  const deadline = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  let errors = 0;
  await Promise.all(
    Array.from({ length: conc }, async (_, worker) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const t0 = performance.now();
        try {
          await op(worker, i);
          latencies.push(performance.now() - t0);
        } catch {
          errors++;
        }
      }
    }),
  );
  return { done: latencies.length, perSecond: latencies.length / seconds, latencies, errors };
}

export default async function leasesBench(args: string[]): Promise<void> {
  const { values: o } = parseArgs({
    args,
    options: {
      reps: { type: 'string', default: '3' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      conc: { type: 'string', default: '50' },
      proxies: { type: 'string', default: '100' },
      capacity: { type: 'string', default: '4' },
    },
  });
  const reps = Number(o.reps);
  const duration = Number(o.duration);
  const conc = Number(o.conc);
  const params = {
    reps,
    durationSeconds: duration,
    warmupSeconds: Number(o.warmup),
    concurrency: conc,
    proxies: Number(o.proxies),
    capacity: Number(o.capacity),
    serviceProcesses: 1,
  };

  const emulators =
    process.env.FIRESTORE_EMULATOR_HOST && process.env.PUBSUB_EMULATOR_HOST
      ? null
      : await startGoogleEmulators({
          firestore: { host: '127.0.0.1', port: await freePort() },
          pubsub: { host: '127.0.0.1', port: await freePort() },
          projectId: 'demo-bench',
        });
  if (emulators) Object.assign(process.env, emulators.env);
  const projectId = `demo-bench-leases-${Date.now().toString(36)}`;
  const db = new Firestore({ projectId });
  const api = await startApiProcess({ GOOGLE_CLOUD_PROJECT: projectId, DISCOVERY_TOKENS: `bench:${TOKEN}` });
  try {
    await writeFleet(
      db,
      Array.from({ length: params.proxies }, (_, i) =>
        proxy(`bench-${String(i).padStart(4, '0')}`, { capacity: params.capacity }),
      ),
    );
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const pair = async () => {
      const res = await fetch(`${api.url}/v1/leases`, { method: 'POST', headers, body: '{"ttlSeconds":60}' });
      const body = (await res.json()) as { leaseId?: string };
      if (res.status !== 201 || !body.leaseId) throw new Error(`acquire ${res.status}`);
      const del = await fetch(`${api.url}/v1/leases/${body.leaseId}`, {
        method: 'DELETE',
        headers: { authorization: headers.authorization },
      });
      await del.body?.cancel();
      if (del.status !== 204) throw new Error(`release ${del.status}`);
    };
    const raw = db.collection('benchRawCommits');
    const commit = (worker: number, i: number) =>
      raw
        .doc(`w${worker}-${i % 20}`)
        .set({ worker, i })
        .then(() => {});

    console.log(
      `warming up ${params.warmupSeconds} s (API at ${api.url}, admin token ${ADMIN_TOKEN.slice(0, 4)}…)`,
    );
    await closedLoop(conc, params.warmupSeconds, commit);
    await closedLoop(conc, params.warmupSeconds, pair);

    const rows: Array<{ rep: number; pairsPerSecond: number; rawCommitsPerSecond: number; errors: number }> =
      [];
    const pairLatencies: number[] = [];
    for (let rep = 1; rep <= reps; rep++) {
      // Alternate which side goes first, so that drift in the machine's load favours neither.
      const order = rep % 2 ? (['raw', 'pairs'] as const) : (['pairs', 'raw'] as const);
      let rawRate = 0;
      let pairRate = 0;
      let errors = 0;
      for (const side of order) {
        if (side === 'raw') {
          const r = await closedLoop(conc, duration, commit);
          rawRate = r.perSecond;
          errors += r.errors;
        } else {
          const r = await closedLoop(conc, duration, pair);
          pairRate = r.perSecond;
          pairLatencies.push(...r.latencies);
          errors += r.errors;
        }
      }
      rows.push({ rep, pairsPerSecond: pairRate, rawCommitsPerSecond: rawRate, errors });
      console.log(
        `rep ${rep}: ${pairRate.toFixed(1)} pairs/s, ${rawRate.toFixed(1)} raw commits/s, ratio ${(pairRate / rawRate).toFixed(3)}, errors ${errors}`,
      );
    }
    const ratios = rows.map((r) => r.pairsPerSecond / r.rawCommitsPerSecond);
    const sorted = [...pairLatencies].sort((a, b) => a - b);
    writeResult({
      name: 'leases',
      params,
      metrics: {
        pairsPerSecond: median(rows.map((r) => r.pairsPerSecond)),
        rawCommitsPerSecond: median(rows.map((r) => r.rawCommitsPerSecond)),
        pairsPerRawCommit: median(ratios),
        pairsPerRawCommitMin: Math.min(...ratios),
        pairsPerRawCommitMax: Math.max(...ratios),
        pairP50Ms: quantile(sorted, 0.5),
        pairP99Ms: quantile(sorted, 0.99),
        errors: rows.reduce((n, r) => n + r.errors, 0),
      },
      targets: { pairsPerRawCommit: { op: '>=', value: 0.4 } },
      notes: [
        'pair = POST /v1/leases then DELETE /v1/leases/{id} over HTTP to one API process (functions/api/src/main.ts)',
        'raw commit = one DocumentReference.set() of a distinct document, same concurrency, same emulator, same run',
        'each pair is two preconditioned batch commits (grant: leaseState + lease; release: leaseState + lease)',
        'per-repetition ratios; the sides alternate order between repetitions',
      ],
    });
  } finally {
    await api.stop();
    await db.terminate();
    await emulators?.stop();
  }
}
