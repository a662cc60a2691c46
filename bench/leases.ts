// Lease benchmark: acquire+release pairs per second through one API process (main.ts, real HTTP, real
// Firestore emulator), 50 concurrent clients, beside the emulator's raw single-document commit rate
// measured in the same run with the same concurrency — interleaved repetitions, ratio per repetition
// (../shared/design/benchmarks.md: the emulator's own limit binds, so it is measured and the ratio is
// what is judged). A pair is two preconditioned two-document writes (grant, release); writes that queue
// behind a busy store share a commit (shared/src/adapters/firestore/group-commit.ts).
//   npm run bench -- leases [--reps 3] [--duration 10] [--warmup 3] [--conc 50] [--proxies 100] [--capacity 4]
//                           [--in-process] [--tsx]
// The API runs as deployed: compiled by `npm run build:functions`'s builder into dist/bench/ (--tsx runs the
// TypeScript under tsx instead, whose source-mapped stack traces cost the Firestore client, which captures
// a stack on every commit, several per cent of the API's CPU).

import http from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Firestore } from '@google-cloud/firestore';
import { freePort } from '../emulators/launcher/free-port.js';
import { startGoogleEmulators } from '../emulators/launcher/google-emulators.js';
import { proxy } from '../shared/src/domain/leases/fixtures.unit.js';
import { systemClock } from '../shared/src/ports/clock.js';
import { buildSources, repoRoot } from '../terraform/build/build-sources.js';
import { leaseTestApp, startApiProcess, writeFleet } from '../test/support/leases.js';
import { writeResult } from './support/result.js';
import { processCpuSeconds } from './support/stats.js';

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

/**
 * A lean HTTP/1.1 keep-alive client (one socket per concurrent client): the load generator shares the
 * two cores with the service and the emulator, so it should cost as little as it can.
 */
function keepAliveClient(base: string, sockets: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const url = new URL(base);
  return (path: string, init: RequestInit) =>
    new Promise<Response>((resolve, reject) => {
      const req = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path,
          method: init.method,
          headers: init.headers as Record<string, string>,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const body = res.statusCode === 204 ? null : Buffer.concat(chunks);
            resolve(new Response(body, { status: res.statusCode ?? 0 }));
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(typeof init.body === 'string' ? init.body : undefined);
    });
}

type Side = 'raw' | 'pairs' | 'inProcessPairs';

/** utime + stime of a process in µs; NaN where that cannot be read. */
const processCpuMicros = (pid: number): number => processCpuSeconds(pid) * 1e6;

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
      'in-process': { type: 'boolean', default: false },
      tsx: { type: 'boolean', default: false },
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
    inProcessSide: o['in-process'] ?? false,
    apiRuns: o.tsx ? 'tsx' : 'compiled',
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
  const [built] = o.tsx ? [] : buildSources({ out: join(repoRoot, 'dist/bench'), only: ['api'] });
  const api = await startApiProcess(
    {
      GOOGLE_CLOUD_PROJECT: projectId,
      DISCOVERY_TOKENS: `bench:${TOKEN}`,
      // The bench's one token drives the instance as hard as it goes: per-caller limits (docs/api.md §
      // Rate limits; the acquire default is 1,000 a second) would turn a faster machine's result into
      // 429s. Set at the code's maximum, they never refuse here.
      RATE_LIMIT_LEASE_ACQUIRE: '100000:1000000',
      RATE_LIMIT_LEASE_OTHER: '100000:1000000',
    },
    { entry: built && join(built.outDir, built.main), tsx: o.tsx },
  );
  // --in-process (a diagnostic): the same app in this process, driven by app.request() (no socket, no
  // second process), separates the HTTP hop and the extra process from the lease store's own cost. Off by
  // default: its listeners would add work to the emulator that the main comparison should not carry.
  const localDb = params.inProcessSide ? new Firestore({ projectId: `${projectId}-local` }) : null;
  const local = localDb
    ? leaseTestApp({
        firestore: localDb,
        clock: systemClock,
        secrets: { access: async () => 'u:p' },
        lease: { tokens: [{ name: 'bench', token: TOKEN }] },
      })
    : null;
  const loadAvg: number[] = [loadavg()[0] ?? 0];
  try {
    const fleet = Array.from({ length: params.proxies }, (_, i) =>
      proxy(`bench-${String(i).padStart(4, '0')}`, { capacity: params.capacity }),
    );
    await writeFleet(db, fleet);
    if (localDb) await writeFleet(localDb, fleet);
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
    type Op = (worker: number, i: number) => Promise<void>;
    const sides: Array<[Side, Op]> = [
      [
        'raw',
        (worker, i) =>
          db
            .collection('benchRawCommits')
            .doc(`w${worker}-${i % 20}`)
            .set({ worker, i })
            .then(() => {}),
      ],
      ['pairs', pairVia(keepAliveClient(api.url, conc))],
    ];
    if (local) sides.push(['inProcessPairs', pairVia(async (path, init) => local.app.request(path, init))]);

    console.log(`warming up ${params.warmupSeconds} s per side (API at ${api.url})`);
    for (const [, op] of sides) await closedLoop(conc, params.warmupSeconds, op);

    const rows: Array<Record<Side, number> & { errors: number }> = [];
    const pairLatencies: number[] = [];
    /** The API process's CPU (user + system) per pair, per repetition: less load-dependent than rates. */
    const apiCpuUsPerPair: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      // Rotate the order of the sides, so that drift in the machine's load favours none of them.
      const row = { raw: 0, pairs: 0, inProcessPairs: 0, errors: 0 };
      for (let k = 0; k < sides.length; k++) {
        const [side, op] = sides[(rep + k) % sides.length]!;
        const cpuBefore = processCpuMicros(api.pid);
        const r = await closedLoop(conc, duration, op);
        row[side] = r.perSecond;
        row.errors += r.errors;
        if (side === 'pairs') {
          pairLatencies.push(...r.latencies);
          const used = processCpuMicros(api.pid) - cpuBefore;
          if (r.done > 0 && Number.isFinite(used)) apiCpuUsPerPair.push(used / r.done);
        }
      }
      rows.push(row);
      loadAvg.push(loadavg()[0] ?? 0);
      const inProcess = local ? ` (${row.inProcessPairs.toFixed(1)} in-process)` : '';
      console.log(
        `rep ${rep + 1}: ${row.pairs.toFixed(1)} pairs/s${inProcess}, ${row.raw.toFixed(1)} raw commits/s, ` +
          `ratio ${(row.pairs / row.raw).toFixed(3)}, API CPU ${apiCpuUsPerPair.at(-1)?.toFixed(0)} µs/pair, ` +
          `errors ${row.errors}`,
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
        ...(local ? { inProcessPairsPerRawCommit: median(rows.map((r) => r.inProcessPairs / r.raw)) } : {}),
        apiCpuUsPerPair: median(apiCpuUsPerPair),
        loadAverage1m: median(loadAvg),
        errors: rows.reduce((n, r) => n + r.errors, 0),
      },
      targets: { pairsPerRawCommit: { op: '>=', value: 0.4 } },
      notes: [
        `pair = POST /v1/leases then DELETE /v1/leases/{id} over HTTP/1.1 keep-alive to one API process (functions/api/src/main.ts, ${params.apiRuns === 'tsx' ? 'under tsx' : 'compiled as deployed'})`,
        'raw commit = one DocumentReference.set() of a distinct document, same concurrency, same emulator, same run',
        'each pair is two preconditioned two-document writes (grant: leaseState + lease; release: leaseState + lease); writes of different proxies that queue behind a busy store share one commit (group commit, at most 2 in flight)',
        'per-repetition ratios; the order of the sides rotates between repetitions; loadAverage1m is the whole machine',
        'apiCpuUsPerPair: the API process’s user+system CPU (/proc/<pid>/stat) over a pairs run, per pair (median of repetitions)',
        ...(local
          ? [
              'inProcessPairsPerRawCommit: the same app driven by app.request() in the bench process (diagnostic)',
            ]
          : []),
      ],
    });
  } finally {
    await local?.leases.stop();
    await api.stop();
    await Promise.all([db.terminate(), localDb?.terminate()]);
    await emulators?.stop();
  }
}
