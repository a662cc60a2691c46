// Gateway syscalls per request: this gateway, the bare Node pipe chainer (gw-mini) and apify proxy-chain,
// each under the same load through the same squid, counted with `strace -c` attached for the load window
// only. Unlike req/s and CPU ratios on a shared 2-core machine (±10 % run to run, bench/gateway.ts), a
// syscall count per request barely moves between runs: it says whether the hot path does more kernel work
// than the floor of a Node chainer, and which calls make the difference. strace slows the traced process
// many times over, so the req/s of this run mean nothing; only the counts are kept.
//   npm run bench -- gateway-syscalls [--modes http,connect,connect-tls] [--duration 3] [--conc 20]
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  buildGateway,
  ensureCommands,
  prepareHarness,
  renderSquidConf,
  repoRoot,
  waitPort,
} from './support/harness.js';
import { type Target, writeResult } from './support/result.js';
import { parseStraceSummary } from './support/strace.js';

const MODES = ['http', 'connect', 'connect-tls'] as const;
type Mode = (typeof MODES)[number];

const SQUID = 'http://u:p@127.0.0.1:19030';
const CONFIGS = [
  { name: 'gateway', port: 19130, auth: 'client:secret', env: {} },
  { name: 'gateway-pinned', port: 19140, auth: 'client:secret', env: { GATEWAY_PLAIN_HTTP: 'pinned' } },
  { name: 'mini', port: 19100, auth: '', env: {} },
  { name: 'proxychain', port: 19110, auth: '', env: {} },
] as const;
type ConfigName = (typeof CONFIGS)[number]['name'];

export default async function gatewaySyscalls(args: string[]): Promise<void> {
  const { values: o } = parseArgs({
    args,
    options: {
      modes: { type: 'string', default: MODES.join(',') },
      duration: { type: 'string', default: '3' },
      conc: { type: 'string', default: '20' },
    },
  });
  const modes = o.modes.split(',') as Mode[];
  const unknown = modes.filter((m) => !MODES.includes(m));
  if (unknown.length) throw new Error(`--modes: unknown ${unknown.join(', ')} (known: ${MODES})`);
  ensureCommands([['strace', 'strace']]);
  const harness = prepareHarness();
  const entry = buildGateway(harness);
  const run = join(harness, 'run');
  const procs: ChildProcess[] = [];
  const start = (
    name: string,
    cmd: string,
    argv: string[],
    env: Record<string, string> = {},
    cwd = harness,
  ) => {
    const log = openSync(join(run, `${name}.log`), 'a');
    const p = spawn(cmd, argv, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', log, log] });
    procs.push(p);
    return p;
  };
  try {
    const conf = renderSquidConf(harness);
    start('target', 'node', ['target.mjs']);
    start('squid', 'squid', ['-N', '-f', conf]);
    await Promise.all([19001, 19002, 19030].map((p) => waitPort(p)));
    const pids = new Map<ConfigName, number>();
    for (const c of CONFIGS) {
      const env = { UPSTREAM_PROXY_URL: SQUID, PORT: String(c.port), METADATA_SERVER_DETECTION: 'none' };
      const p = c.name.startsWith('gateway')
        ? start(c.name, 'node', [entry], { ...env, ...c.env }, repoRoot)
        : start(c.name, 'node', [`gateways/gw-${c.name === 'mini' ? 'mini' : 'proxy-chain'}.mjs`], env);
      pids.set(c.name, p.pid!);
      await waitPort(c.port);
    }
    const perRequest: Record<string, Record<string, number>> = {};
    for (const mode of modes) {
      for (const c of CONFIGS) {
        if (mode !== 'http' && c.name === 'gateway-pinned') continue; // same code as gateway off plain HTTP
        load(harness, mode, c.port, c.auth, 1, Number(o.conc)); // warm-up: JIT, pools
        const out = join(run, `strace-${c.name}-${mode}.txt`);
        const tracer = start(`strace-${c.name}`, 'strace', [
          '-c',
          '-f',
          '-o',
          out,
          '-p',
          String(pids.get(c.name)),
        ]);
        const exited = new Promise((r) => tracer.once('exit', r));
        await sleep(500); // attached to every thread before the load starts
        // strace gone already: it could not attach (ptrace restricted, say); its log says why.
        if (tracer.exitCode !== null || tracer.signalCode !== null)
          throw new Error(`strace exited before the load (see ${join(run, `strace-${c.name}.log`)})`);
        const requests = load(harness, mode, c.port, c.auth, Number(o.duration), Number(o.conc));
        tracer.kill('SIGINT');
        await exited;
        const calls = parseStraceSummary(readFileSync(out, 'utf8'));
        const row: Record<string, number> = { requests };
        let total = 0;
        for (const [name, n] of calls) {
          total += n;
          if (n / requests >= 0.05) row[name] = round(n / requests);
        }
        row.total = round(total / requests);
        perRequest[`${mode}/${c.name}`] = row;
        console.log(`${mode}/${c.name}: ${row.total} syscalls per request (${requests} requests)`);
      }
    }
    const metrics: Record<string, number | null> = {};
    const targets: Record<string, Target> = {};
    for (const mode of MODES) {
      const key = mode === 'connect-tls' ? 'connectTls' : mode;
      const total = (c: ConfigName) => perRequest[`${mode}/${c}`]?.total ?? null;
      const ratio = (a: number | null, b: number | null) => (a !== null && b ? round(a / b) : null);
      metrics[`${key}GatewaySyscallsPerRequest`] = total('gateway');
      metrics[`${key}BarePipeSyscallsPerRequest`] = total('mini');
      metrics[`${key}ProxyChainSyscallsPerRequest`] = total('proxychain');
      metrics[`${key}SyscallsVsBarePipe`] = ratio(total('gateway'), total('mini'));
      metrics[`${key}SyscallsVsProxyChain`] = ratio(total('gateway'), total('proxychain'));
      const gw = total('gateway');
      const pipe = total('mini');
      metrics[`${key}SyscallsOverBarePipe`] = gw !== null && pipe !== null ? round(gw - pipe) : null;
      // The gateway does what the bare pipe does plus auth, routing, the SSRF guard and outcomes, all in
      // user space: its kernel work per request should be the pipe's plus the one setsockopt of
      // TCP_NODELAY on its upstream socket (proxy-session.ts says why), and the few tenths of epoll_ctl,
      // epoll_pwait and futex that which end of a tunnel closes first moves (a race; docs/gateway.md §
      // Syscalls per request). One more call per request in the hot path misses it.
      targets[`${key}SyscallsOverBarePipe`] = { op: '<=', value: 2 };
    }
    metrics.httpPinnedSyscallsPerRequest = perRequest['http/gateway-pinned']?.total ?? null;
    writeResult({
      name: 'gateway-syscalls',
      params: {
        upstream: 'squid',
        modes,
        durationSeconds: Number(o.duration),
        concurrency: Number(o.conc),
        tracer: 'strace -c -f, attached for the load window only',
      },
      metrics,
      targets,
      notes: [
        'Counts per request, from `strace -c -f -p <pid>` attached after a 1 s warm-up and detached when the load ends; requests in flight at the window edges make up under 1 % of a run.',
        'strace slows the traced process many times over: the req/s of this run are not a measure of anything and are not kept.',
        `Per mode and peer, the calls making up at least 0.05 per request: ${JSON.stringify(perRequest)}`,
      ],
    });
  } finally {
    for (const p of procs.reverse()) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
  }
}

/** Runs the harness's load generator; returns the requests it completed. */
function load(
  harness: string,
  mode: Mode,
  port: number,
  auth: string,
  seconds: number,
  conc: number,
): number {
  const a = ['-c', String(conc), '-d', `${seconds}s`, '-timeout', '10s', '-proxy', `127.0.0.1:${port}`];
  if (mode === 'http') a.push('-mode', 'http', '-target', '127.0.0.1:19001');
  else
    a.push(
      '-mode',
      'connect',
      ...(mode === 'connect-tls' ? ['-tls', '-target', '127.0.0.1:19002'] : ['-target', '127.0.0.1:19001']),
    );
  if (auth) a.push('-auth', auth);
  const r = JSON.parse(
    execFileSync(join(harness, 'bin/pxload'), a, { encoding: 'utf8', timeout: (seconds + 30) * 1000 }),
  ) as {
    requests: number;
    errors: number;
  };
  if (r.errors > 0) throw new Error(`pxload ${mode} on :${port}: ${r.errors} errors of ${r.requests}`);
  return r.requests;
}

const round = (x: number) => Math.round(x * 100) / 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
