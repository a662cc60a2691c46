// Gateway benchmark: this gateway in standalone mode vs apify proxy-chain vs the bare Node pipe chainer
// (gw-mini), all chaining to the same squid upstream, plus squid used directly — one interleaved run of
// the handbook harness (../shared/bench, README there). Ratios are paired per repetition.
//   npm run bench -- gateway [--reps 3] [--duration 5] [--warmup 2] [--conc 50] [--tput-n 3]
//   npm run bench -- gateway --modes connect,connect-tls --peers mini --reps 1   (a short run while iterating;
//                                                  metrics of the modes and peers left out come out null)
//   npm run bench -- gateway --from /tmp/gwbench-XXXX/results/gateway   (re-summarise an earlier run)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SINGLE_THREADED_GC } from '../functions/gateway/src/gc-threads.js';
import { buildGateway, prepareHarness, repoRoot } from './support/harness.js';
import { type Target, writeResult } from './support/result.js';
import { median } from './support/stats.js';

/** What the harness records about a run (meta.json beside raw.jsonl). */
interface RunMeta {
  started: string;
  conc: number;
  duration_s: number;
  reps: number;
  warmup_s: number;
  modes: string[];
  gateways: string[];
  tput_mb: number;
  tput_n: number;
}

interface RawRecord {
  group: string;
  config: string;
  mode: string;
  rep: number;
  rps?: number;
  mib_per_s?: number;
  gw_cpu_us_per_req?: number;
  errors?: number;
  requests?: number;
  error?: string;
  other_cpu_s?: number;
}

const GATEWAY = 'gateway';
/**
 * The same gateway with GATEWAY_PLAIN_HTTP=pinned, in the same interleaved run (docs/gateway.md § Plain
 * HTTP): what an upstream without filtersDestinations (an external proxy) gets. `gateway` itself runs
 * in the default `auto` mode over entries marked filtersDestinations, i.e. as for a managed proxy.
 */
const GATEWAY_PINNED = 'gateway-pinned';
const MODES = ['http', 'connect', 'connect-tls', 'tput'] as const;
// Paced runs: CPU per request at a fixed rate is far less sensitive to other tenants of a shared box than
// at saturation (the absolute figure is higher: fewer events are batched per wake-up).
const PACED = ['http@300', 'connect@300', 'connect-tls@150'] as const;
const KEY: Record<(typeof MODES)[number], string> = {
  http: 'http',
  connect: 'connect',
  'connect-tls': 'connectTls',
  tput: 'tput',
};

/** Per-repetition ratios a/b (same repetition, same mode). */
function ratios(rows: RawRecord[], mode: string, a: string, b: string, field: keyof RawRecord): number[] {
  const out: number[] = [];
  for (const ra of rows.filter((r) => r.mode === mode && r.config === a)) {
    const rb = rows.find((r) => r.mode === mode && r.config === b && r.rep === ra.rep);
    const va = ra[field] as number | undefined;
    const vb = rb?.[field] as number | undefined;
    if (va && vb) out.push(va / vb);
  }
  return out;
}

/** Smallest, middle and largest of a sample (null for none). */
function stats(xs: number[]): { min: number | null; median: number | null; max: number | null } {
  const s = [...xs].sort((x, y) => x - y);
  return { min: s[0] ?? null, median: median(s), max: s.at(-1) ?? null };
}

/** Median over repetitions of a/b, each pair taken from the same repetition and mode. */
function paired(
  rows: RawRecord[],
  mode: string,
  a: string,
  b: string,
  field: keyof RawRecord,
): number | null {
  return median(ratios(rows, mode, a, b, field));
}

export default async function gatewayBench(args: string[]): Promise<void> {
  const { values: o } = parseArgs({
    args,
    options: {
      reps: { type: 'string', default: '3' },
      duration: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '2' },
      conc: { type: 'string', default: '50' },
      'tput-mb': { type: 'string', default: '100' },
      'tput-n': { type: 'string', default: '3' },
      /** Subset of MODES and PACED (all by default). */
      modes: { type: 'string' },
      /** Peers beside the gateway: mini, proxychain, gateway-pinned (all by default). */
      peers: { type: 'string' },
      from: { type: 'string' },
    },
  });
  const out = o.from ?? join(prepareHarness(), 'results', 'gateway');
  if (!o.from) runHarness(out, o);
  summarise(out);
}

function runHarness(out: string, o: Record<string, string | undefined>): void {
  const harness = join(out, '..', '..');
  const entry = buildGateway(harness);
  const spec = (name: string, port: number, env: Record<string, string> = {}) => ({
    name,
    // As Terraform starts it by default (functions/gateway/src/gc-threads.ts).
    cmd: ['node', SINGLE_THREADED_GC, entry],
    cwd: repoRoot,
    port,
    env: { UPSTREAM_PROXY_URL: '{upstream}', PORT: '{port}', ...env },
    clientAuth: 'client:secret',
  });
  const allModes: string[] = [...MODES, ...PACED];
  const modes = o.modes ? o.modes.split(',') : allModes;
  const unknown = modes.filter((m) => !allModes.includes(m));
  if (unknown.length) throw new Error(`--modes: unknown ${unknown.join(', ')} (known: ${allModes})`);
  const peers = o.peers ? o.peers.split(',') : ['mini', 'proxychain', GATEWAY_PINNED];
  const specs = [
    spec(GATEWAY, 19130),
    ...(peers.includes(GATEWAY_PINNED)
      ? [spec(GATEWAY_PINNED, 19140, { GATEWAY_PLAIN_HTTP: 'pinned' })]
      : []),
  ];
  const builtin = peers.filter((p) => p === 'mini' || p === 'proxychain');
  const run = spawnSync(
    'node',
    [
      'bench.mjs',
      '--upstreams=squid',
      `--gateways=${builtin.join(',')}`,
      ...specs.map((g) => `--gw=${JSON.stringify(g)}`),
      `--modes=${modes.join(',')}`,
      `--reps=${o.reps}`,
      `--duration=${o.duration}`,
      `--warmup=${o.warmup}`,
      `--conc=${o.conc}`,
      `--tput-mb=${o['tput-mb']}`,
      `--tput-n=${o['tput-n']}`,
      '--no-noproxy',
      `--out=${out}`,
    ],
    { cwd: harness, stdio: 'inherit' },
  );
  if (run.status !== 0) throw new Error(`harness exited with ${run.status}`);
}

function summarise(out: string): void {
  // The run's own parameters, not this command line's: `--from` re-summarises an earlier run.
  const meta = JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8')) as RunMeta;
  const rows = readFileSync(join(out, 'raw.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RawRecord)
    .filter((r) => r.rep > 0 && !r.error && r.group === 'squid');

  const metrics: Record<string, number | null> = {};
  const targets: Record<string, Target> = {};
  const pcTarget: Record<string, number> = { http: 1.3, connect: 1.3, 'connect-tls': 1.15 };
  /** A target ratio as its median, with the min and max over repetitions beside it (`<key>Min`, `<key>Max`). */
  const spread = (key: string, mode: string, peer: string, field: keyof RawRecord) => {
    const st = stats(ratios(rows, mode, GATEWAY, peer, field));
    metrics[key] = st.median;
    metrics[`${key}Min`] = st.min;
    metrics[`${key}Max`] = st.max;
  };
  for (const mode of MODES.filter((m) => m !== 'tput')) {
    const k = KEY[mode];
    spread(`${k}RpsVsProxyChain`, mode, 'proxychain', 'rps');
    spread(`${k}RpsVsBarePipe`, mode, 'mini', 'rps');
    spread(`${k}CpuPerRequestVsProxyChain`, mode, 'proxychain', 'gw_cpu_us_per_req');
    // For CONNECT, gateway-pinned is the same code as gateway (the pinned mode changes plain HTTP only):
    // how far two copies of one build read apart in the same repetition is the harness's resolution.
    if (mode !== 'http') {
      const st = stats(ratios(rows, mode, GATEWAY_PINNED, GATEWAY, 'rps'));
      metrics[`${k}SameBuildRpsMin`] = st.min;
      metrics[`${k}SameBuildRpsMedian`] = st.median;
      metrics[`${k}SameBuildRpsMax`] = st.max;
    }
    metrics[`${k}RpsVsDirect`] = paired(rows, mode, GATEWAY, 'direct', 'rps');
    metrics[`${k}ProxyChainRpsVsDirect`] = paired(rows, mode, 'proxychain', 'direct', 'rps');
    metrics[`${k}BarePipeRpsVsDirect`] = paired(rows, mode, 'mini', 'direct', 'rps');
    // Context for the proxy-chain target: what the lower bound of a Node chainer reads in the same run.
    metrics[`${k}BarePipeRpsVsProxyChain`] = paired(rows, mode, 'mini', 'proxychain', 'rps');
    metrics[`${k}GatewayCpuUsPerRequest`] = median(
      rows.filter((r) => r.mode === mode && r.config === GATEWAY).map((r) => r.gw_cpu_us_per_req ?? 0),
    );
    metrics[`${k}GatewayErrors`] = rows
      .filter((r) => r.mode === mode && r.config === GATEWAY)
      .reduce((n, r) => n + (r.errors ?? 0), 0);
    targets[`${k}RpsVsProxyChain`] = { op: '>=', value: pcTarget[mode]! };
    targets[`${k}RpsVsBarePipe`] = { op: '>=', value: 0.9 };
    targets[`${k}CpuPerRequestVsProxyChain`] = { op: '<=', value: 0.7 };
  }
  for (const paced of PACED) {
    const k = `${KEY[paced.split('@')[0] as (typeof MODES)[number]]}Paced`;
    metrics[`${k}CpuPerRequestVsProxyChain`] = paired(
      rows,
      paced,
      GATEWAY,
      'proxychain',
      'gw_cpu_us_per_req',
    );
    metrics[`${k}CpuPerRequestVsBarePipe`] = paired(rows, paced, GATEWAY, 'mini', 'gw_cpu_us_per_req');
    metrics[`${k}GatewayCpuUsPerRequest`] = median(
      rows.filter((r) => r.mode === paced && r.config === GATEWAY).map((r) => r.gw_cpu_us_per_req ?? 0),
    );
  }
  // Plain HTTP, absolute form over kept-alive upstream connections (GATEWAY) vs pinned CONNECT
  // (GATEWAY_PINNED): the only modes it changes.
  for (const [mode, field, key] of [
    ['http', 'rps', 'httpAbsoluteVsPinnedRps'],
    ['http', 'gw_cpu_us_per_req', 'httpAbsoluteVsPinnedCpuPerRequest'],
    ['http@300', 'gw_cpu_us_per_req', 'httpPacedAbsoluteVsPinnedCpuPerRequest'],
  ] as const) {
    const st = stats(ratios(rows, mode, GATEWAY, GATEWAY_PINNED, field));
    metrics[`${key}Min`] = st.min;
    metrics[`${key}Median`] = st.median;
    metrics[`${key}Max`] = st.max;
  }
  metrics.httpPinnedRpsVsProxyChain = paired(rows, 'http', GATEWAY_PINNED, 'proxychain', 'rps');
  metrics.httpPinnedRpsVsBarePipe = paired(rows, 'http', GATEWAY_PINNED, 'mini', 'rps');
  metrics.httpPinnedCpuPerRequestVsProxyChain = paired(
    rows,
    'http',
    GATEWAY_PINNED,
    'proxychain',
    'gw_cpu_us_per_req',
  );
  metrics.httpPinnedGatewayErrors = rows
    .filter((r) => r.mode === 'http' && r.config === GATEWAY_PINNED)
    .reduce((n, r) => n + (r.errors ?? 0), 0);
  spread('tputMibpsVsBarePipe', 'tput', 'mini', 'mib_per_s');
  metrics.tputMibpsVsProxyChain = paired(rows, 'tput', GATEWAY, 'proxychain', 'mib_per_s');
  metrics.tputGatewayMibps = median(
    rows.filter((r) => r.mode === 'tput' && r.config === GATEWAY).map((r) => r.mib_per_s ?? 0),
  );
  targets.tputMibpsVsBarePipe = { op: '>=', value: 1 };
  // CPU burnt by other tenants of the machine during a run (harness: busy time minus our processes).
  metrics.otherTenantCpuSecondsPerRun = median(rows.map((r) => r.other_cpu_s ?? 0));

  const peers = meta.gateways.filter((g) => g !== GATEWAY);
  const full =
    ['mini', 'proxychain', GATEWAY_PINNED].every((p) => peers.includes(p)) &&
    [...MODES, ...PACED].every((m) => meta.modes.includes(m));
  const file = writeResult({
    // A run over a subset of modes or peers is for iterating: it never replaces the full run's record.
    name: full ? 'gateway' : 'gateway-partial',
    at: new Date(meta.started),
    params: {
      upstream: 'squid',
      peers: [
        'direct',
        ...peers.map((p) =>
          p === 'mini'
            ? 'mini (bare Node pipe)'
            : p === 'proxychain'
              ? 'proxychain (apify proxy-chain 3.0.1)'
              : p,
        ),
      ],
      modes: meta.modes,
      reps: meta.reps,
      durationSeconds: meta.duration_s,
      warmupSeconds: meta.warmup_s,
      concurrency: meta.conc,
      tputMiB: meta.tput_mb,
      tputTransfers: meta.tput_n,
      snapshotEntries: 1000,
      clientAuth: 'Basic (gateway only; the peers accept anyone)',
    },
    metrics,
    targets,
    notes: [
      'Ratios are medians of per-repetition paired ratios (same rep, same mode); each target ratio has its min and max over repetitions beside it (<name>Min, <name>Max).',
      '*SameBuildRps* (connect, connect-tls): gateway-pinned / gateway per repetition. On CONNECT the two are the same code (the pinned mode changes plain HTTP only), so this spread is how far apart two copies of one build read in the same run: the resolution of the throughput ratios.',
      'otherTenantCpuSecondsPerRun close to or above durationSeconds means other processes held about a core or more during the runs: throughput ratios are then dominated by scheduling noise; the paced CPU-per-request figures are the steadier ones.',
      'The gateway runs as compiled JavaScript (tsc), as deployed; not under tsx.',
      'gateway runs in the default GATEWAY_PLAIN_HTTP=auto over snapshot entries marked filtersDestinations, as the control plane marks a managed proxy: plain HTTP goes in absolute form with the host name over kept-alive upstream connections. The bench squid is stock (it must reach its loopback target, so it filters nothing), but the gateway acts on the mark alone, so this is what a managed upstream gets. gateway-pinned is the same build with GATEWAY_PLAIN_HTTP=pinned (a CONNECT tunnel to the SSRF-checked address per request): what an external upstream gets. *AbsoluteVsPinned* are per-repetition ratios gateway / gateway-pinned (min, median, max); httpPinned* compare gateway-pinned with the peers.',
      '*BarePipeRpsVsProxyChain* is the bare Node pipe (gw-mini: no auth, no routing, no SSRF check, no outcomes — the lower bound of a Node chainer) against proxy-chain in the same run: the headroom a proxy-chain target leaves on this machine.',
      `Harness summary: ${join(out, 'summary.md')}`,
    ],
  });
  console.log(`results: ${file}`);
}
