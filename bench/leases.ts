// Lease benchmark: acquire+release pairs per second through one API process (main.ts, real HTTP, real
// Firestore emulator), 50 concurrent clients, beside the emulator's raw single-document commit rate
// measured in the same run with the same concurrency — interleaved repetitions, ratio per repetition
// (../shared/design/benchmarks.md: the emulator's own limit binds, so it is measured and the ratio is
// what is judged). A pair costs two preconditioned batch commits (grant, release), so ~0.5 is the ceiling.
//   npm run bench -- leases [--reps 3] [--duration 10] [--warmup 3] [--conc 50] [--proxies 100] [--capacity 4]

import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Firestore } from '@google-cloud/firestore';
import { freePort } from '../emulators/launcher/free-port.js';
import { startGoogleEmulators } from '../emulators/launcher/google-emulators.js';
import { proxy } from '../shared/src/domain/leases/fixtures.unit.js';
import { systemClock } from '../shared/src/ports/clock.js';
import { leaseTestApp, startApiProcess, writeFleet } from '../test/support/leases.js';
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
  // The same app in this process, driven by app.request() (no socket, no second process): separates the
  // HTTP hop and the extra process from the lease store's own cost. Its own project, the same emulator.
  const localDb = new Firestore({ projectId: `${projectId}-local` });
  const local = leaseTestApp({
    firestore: localDb,
    clock: systemClock,
    secrets: { access: async () => 'u:p' },
    lease: { tokens: [{ name: 'bench', token: TOKEN }] },
  });
  const loadAvg: number[] = [loadavg()[0] ?? 0];
  try {
    const fleet = Array.from({ length: params.proxies }, (_, i) =>
      proxy(`bench-${String(i).padStart(4, '0')}`, { capacity: params.capacity }),
    );
    await writeFleet(db, fleet);
    await writeFleet(localDb, fleet);
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const pairVia = (send: (path: string, init: RequestInit) => Promise<Response>) => async () => {
      const res = await send('/v1/leases', { method: 'POST', headers, body: '{"ttlSeconds":60}' });
      const body = (await res.json()) as { leaseId?: string };
      if (res.status !== 201 || !body.leaseId) throw new Error(`acquire ${res.status}`);
      const del = await send(`/v1/leases/${body.leaseId}`, {
        method: 'DELETE',
        headers: { authorization: headers.authorization },
      });
      await del.body?.cancel();
      if (del.status !== 204) throw new Error(`release ${del.status}`);
    };
    const sides = {
      pairs: pairVia((path, init) => fetch(`${api.url}${path}`, init)),
      inProcessPairs: pairVia(async (path, init) => local.app.request(path, init)),
      raw: (worker: number, i: number) =>
        db
          .collection('benchRawCommits')
          .doc(`w${worker}-${i % 20}`)
          .set({ worker, i })
          .then(() => {}),
    };
    type Side = keyof typeof sides;

    console.log(`warming up ${params.warmupSeconds} s per side (API at ${api.url})`);
    for (const side of Object.keys(sides) as Side[])
      await closedLoop(conc, params.warmupSeconds, sides[side]);

    const rows: Array<Record<Side, number> & { errors: number }> = [];
    const pairLatencies: number[] = [];
    const orders: Side[][] = [
      ['raw', 'pairs', 'inProcessPairs'],
      ['pairs', 'inProcessPairs', 'raw'],
      ['inProcessPairs', 'raw', 'pairs'],
    ];
    for (let rep = 0; rep < reps; rep++) {
      // Rotate the order, so that drift in the machine's load favours no side.
      const row = { raw: 0, pairs: 0, inProcessPairs: 0, errors: 0 };
      for (const side of orders[rep % orders.length]!) {
        const r = await closedLoop(conc, duration, sides[side]);
        row[side] = r.perSecond;
        row.errors += r.errors;
        if (side === 'pairs') pairLatencies.push(...r.latencies);
      }
      rows.push(row);
      loadAvg.push(loadavg()[0] ?? 0);
      console.log(
        `rep ${rep + 1}: ${row.pairs.toFixed(1)} pairs/s (${row.inProcessPairs.toFixed(1)} in-process), ` +
          `${row.raw.toFixed(1)} raw commits/s, ratio ${(row.pairs / row.raw).toFixed(3)}, errors ${row.errors}`,
      );
    }
    const ratios = rows.map((r) => r.pairs / r.raw);
    const sorted = [...pairLatencies].sort((a, b) => a - b);
    writeResult({
      name: 'leases',
      params,
      metrics: {
        pairsPerSecond: median(rows.map((r) => r.pairs)),
        rawCommitsPerSecond: median(rows.map((r) => r.raw)),
        pairsPerRawCommit: median(ratios),
        pairsPerRawCommitMin: Math.min(...ratios),
        pairsPerRawCommitMax: Math.max(...ratios),
        pairP50Ms: quantile(sorted, 0.5),
        pairP99Ms: quantile(sorted, 0.99),
        inProcessPairsPerRawCommit: median(rows.map((r) => r.inProcessPairs / r.raw)),
        loadAverage1m: median(loadAvg),
        errors: rows.reduce((n, r) => n + r.errors, 0),
      },
      targets: { pairsPerRawCommit: { op: '>=', value: 0.4 } },
      notes: [
        'pair = POST /v1/leases then DELETE /v1/leases/{id} over HTTP to one API process (functions/api/src/main.ts)',
        'raw commit = one DocumentReference.set() of a distinct document, same concurrency, same emulator, same run',
        'each pair is two preconditioned two-document batch commits (grant: leaseState + lease; release: leaseState + lease)',
        'inProcessPairsPerRawCommit: the same app driven by app.request() in the bench process (diagnostic, no target)',
        'per-repetition ratios; the order of the sides rotates between repetitions; loadAverage1m is the machine, all tenants',
      ],
    });
  } finally {
    await local.leases.stop();
    await api.stop();
    await Promise.all([db.terminate(), localDb.terminate()]);
    await emulators?.stop();
  }
}
