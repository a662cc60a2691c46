// `npm run bench -- gateway-fetch [--reps 6] [--small 4000] [--conc 50] [--bulk-mb 32] [--bulk-n 10]`
//
// The fetch endpoint (POST /v1/fetch, the only listener the Cloud Run gateway serves) under V8's two
// marking modes (functions/gateway/src/gc-marking.ts), side by side: two compiled standalone gateways
// with the proxy listener off, one GATEWAY_GC_MARKING=atomic (the default) and one =incremental, over the
// handbook harness's squid and target, driven by an in-process client in interleaved repetitions (the
// first a warm-up), gateway CPU read from /proc. Small fetches (the target's index page, `--conc` at a
// time) and bulk ones (`--bulk-mb` MiB each, two at a time). Its targets check the default: atomic costs
// no more CPU than incremental on either.
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildGateway, prepareHarness, renderSquidConf, repoRoot, waitPort } from './support/harness.js';
import { writeResult } from './support/result.js';
import { median, processCpuSeconds } from './support/stats.js';

const MODES = ['atomic', 'incremental'] as const;
type Mode = (typeof MODES)[number];
const HTTP_PORT: Record<Mode, number> = { atomic: 19160, incremental: 19161 };
const TOKEN = 'bench';

export default async function gatewayFetchBench(args: string[]): Promise<void> {
  const { values: o } = parseArgs({
    args,
    options: {
      reps: { type: 'string', default: '6' },
      small: { type: 'string', default: '4000' },
      conc: { type: 'string', default: '50' },
      'bulk-mb': { type: 'string', default: '32' },
      'bulk-n': { type: 'string', default: '10' },
    },
  });
  const reps = Number(o.reps);
  const small = Number(o.small);
  const conc = Number(o.conc);
  const bulkMb = Number(o['bulk-mb']);
  const bulkN = Number(o['bulk-n']);
  const harness = prepareHarness();
  const entry = buildGateway(harness);
  const procs: ChildProcess[] = [];
  try {
    const conf = renderSquidConf(harness);
    procs.push(spawn('squid', ['-N', '-f', conf], { stdio: 'ignore' }));
    procs.push(spawn('node', [join(harness, 'target.mjs')], { stdio: 'ignore' }));
    await Promise.all([waitPort(19030), waitPort(19001)]);
    const gateways = {} as Record<Mode, ChildProcess>;
    for (const mode of MODES) {
      gateways[mode] = spawn('node', [entry], {
        cwd: repoRoot,
        stdio: 'ignore',
        env: {
          ...process.env,
          UPSTREAM_PROXY_URL: 'http://u:p@127.0.0.1:19030',
          GATEWAY_PROXY_PORT: 'off',
          GATEWAY_HTTP_PORT: String(HTTP_PORT[mode]),
          GATEWAY_FETCH_TOKENS: TOKEN,
          GATEWAY_GC_MARKING: mode,
        },
      });
      procs.push(gateways[mode]);
    }
    await Promise.all(MODES.map((m) => waitPort(HTTP_PORT[m])));

    const rows: Array<{
      rep: number;
      mode: Mode;
      kind: 'small' | 'bulk';
      cpuS: number;
      wallS: number;
      n: number;
      bytes: number;
    }> = [];
    for (let rep = 0; rep <= reps; rep++) {
      const order = rep % 2 === 0 ? MODES : [...MODES].reverse();
      for (const mode of order) {
        const pid = gateways[mode].pid!;
        for (const [kind, n, c, path] of [
          ['small', small, conc, '/'],
          ['bulk', bulkN, 2, `/big?mb=${bulkMb}`],
        ] as const) {
          const cpu0 = processCpuSeconds(pid);
          const t0 = performance.now();
          const bytes = await fetchMany(HTTP_PORT[mode], `http://127.0.0.1:19001${path}`, n, c);
          const wallS = (performance.now() - t0) / 1000;
          const cpuS = processCpuSeconds(pid) - cpu0;
          console.log(
            `rep ${rep}${rep === 0 ? ' (warm-up)' : ''} ${mode} ${kind}: ${(n / wallS).toFixed(0)}/s, gateway CPU ${cpuS.toFixed(2)} s`,
          );
          if (rep > 0) rows.push({ rep, mode, kind, cpuS, wallS, n, bytes });
        }
      }
    }

    const pick = (mode: Mode, kind: 'small' | 'bulk') =>
      rows.filter((r) => r.mode === mode && r.kind === kind);
    const ratios = (kind: 'small' | 'bulk') =>
      pick('atomic', kind).map((a) => a.cpuS / pick('incremental', kind).find((i) => i.rep === a.rep)!.cpuS);
    const usPerFetch = (mode: Mode) => (median(pick(mode, 'small').map((r) => r.cpuS / r.n)) ?? 0) * 1e6;
    const sPerGiB = (mode: Mode) => median(pick(mode, 'bulk').map((r) => r.cpuS / (r.bytes / 2 ** 30)));
    writeResult({
      name: 'gateway-fetch',
      params: {
        reps,
        small,
        conc,
        bulkMb,
        bulkN,
        upstream: 'squid (handbook harness)',
        proxyListener: 'off',
      },
      metrics: {
        smallAtomicVsIncrementalCpu: median(ratios('small')),
        smallAtomicCpuUsPerFetch: usPerFetch('atomic'),
        smallIncrementalCpuUsPerFetch: usPerFetch('incremental'),
        smallAtomicFetchesPerSecond: median(pick('atomic', 'small').map((r) => r.n / r.wallS)),
        smallIncrementalFetchesPerSecond: median(pick('incremental', 'small').map((r) => r.n / r.wallS)),
        bulkAtomicVsIncrementalCpu: median(ratios('bulk')),
        bulkAtomicCpuSecondsPerGiB: sPerGiB('atomic'),
        bulkIncrementalCpuSecondsPerGiB: sPerGiB('incremental'),
      },
      targets: {
        // GATEWAY_GC_MARKING defaults to atomic: right for the fetch endpoint while these hold.
        smallAtomicVsIncrementalCpu: { op: '<=', value: 1 },
        bulkAtomicVsIncrementalCpu: { op: '<=', value: 1 },
      },
      notes: [
        'Ratios are medians of per-repetition pairs (atomic CPU / incremental CPU, same repetition).',
        'The client runs in the bench process and shares the two cores with squid, the target and both gateways.',
      ],
    });
  } finally {
    for (const p of procs) p.kill('SIGTERM');
  }
}

/** n POST /v1/fetch of `url`, `conc` at a time over kept-alive connections; the response bytes read. */
async function fetchMany(port: number, url: string, n: number, conc: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: conc });
  const body = JSON.stringify({ url, method: 'GET' });
  let started = 0;
  let bytes = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          path: '/v1/fetch',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`/v1/fetch answered ${res.statusCode}`));
          res.on('data', (c: Buffer) => {
            bytes += c.length;
          });
          res.on('end', resolve);
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const worker = async () => {
    while (started < n) {
      started++;
      await one();
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(conc, n) }, worker));
  } finally {
    agent.destroy();
  }
  return bytes;
}
