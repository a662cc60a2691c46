// `npm start`'s demo step (skipped by --no-demo): serves the demo target site, and on an empty plane
// creates the demo fleet (demo-fleet.ts) through the admin API like any user would, shows each proxy's
// way to Ready, then prints how to lease one and fetch the demo page through it (demo-instructions.ts).
// A failing demo is reported and leaves the plane running: it is a convenience, not a piece of the plane.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type HostPort, hostPort } from '../../shared/src/config/local-ports.js';
import { demoCertificate } from '../demo-target/certificate.js';
import { startDemoTarget } from '../demo-target/server.js';
import { createForwardProxy } from '../forward-proxy/proxy.js';
import { DEMO_POOL, demoFleet } from './demo-fleet.js';
import { demoInstructions } from './demo-instructions.js';
import { ensureDemoSecret } from './demo-secret.js';
import { planeLayout } from './layout.js';
import type { PlaneOptions } from './options.js';
import type { RunningPlane } from './plane.js';
import { fleetPageUrl } from './report.js';
import { Layer, type Teardown } from './teardown.js';

export interface DemoOptions {
  apiUrl: string;
  adminToken: string | undefined;
  computeUrl: string;
  secretManagerHost: string;
  projectId: string;
  demoTarget: HostPort & { tlsPort: number };
  /** Where the demo site keeps its certificate (the plane's state directory). */
  stateDir: string;
  gatewayProxyUrl?: string;
  /** The gateway's HTTP listener (its /healthz says how many proxies its snapshot carries). */
  gatewayUrl?: string;
  progress(line: string): void;
  print(text: string): void;
  /** Registers something the demo started, so that Ctrl-C stops it with the rest. */
  onUp(name: string, stop: () => Promise<void>): void;
  stopping(): boolean;
  readyTimeoutMs?: number;
  gatewayTimeoutMs?: number;
}

interface ProxyJson {
  name: string;
  status: {
    phase: string;
    providerId: string | null;
    conditions: Array<{ type: string; status: string; message: string }>;
  };
}

class DemoApi {
  constructor(
    private readonly base: string,
    private readonly token: string | undefined,
  ) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; json: T }> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, json: (await res.json()) as T };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runDemo(o: DemoOptions): Promise<void> {
  const certificate = await demoCertificate(join(o.stateDir, 'demo-target'), new Date());
  const target = await startDemoTarget({
    ...o.demoTarget,
    ...(certificate ? { tls: { port: o.demoTarget.tlsPort, ...certificate } } : {}),
  });
  o.onUp('demo target', target.stop);
  o.progress(
    target.tlsUrl
      ? `demo target up at ${target.url} and ${target.tlsUrl} (certificate ${certificate?.certPath})`
      : `demo target up at ${target.url} (no HTTPS: openssl is not installed)`,
  );

  const api = new DemoApi(o.apiUrl, o.adminToken);
  const existing = await api.call<{ proxies: ProxyJson[] }>('GET', '/v1/proxies');
  if (existing.status === 401 || existing.status === 403) {
    throw new Error(
      'the API refused the admin token: with your own ADMIN_TOKENS, export PROXYPLANE_ADMIN_TOKEN too',
    );
  }
  if (existing.status !== 200) throw new Error(`GET /v1/proxies answered ${existing.status}`);
  if (existing.json.proxies.length > 0) {
    o.progress(`demo fleet skipped: the plane already has ${existing.json.proxies.length} proxies`);
    return;
  }

  const credentials = await ensureDemoSecret({ emulatorHost: o.secretManagerHost, projectId: o.projectId });
  // External proxies are ones the plane does not run: here, forward proxies in this process — one HTTP,
  // one SOCKS5 (what a crawler team's residential provider often offers).
  // From the default source, not 127.0.0.1: a loopback source reaches nothing off this machine.
  const external = createForwardProxy({ host: '127.0.0.1', port: 0, credentials });
  const bound = await external.listen();
  o.onUp('demo external proxy', () => external.close());
  const socks = createForwardProxy({ host: '127.0.0.1', port: 0, credentials, protocol: 'socks5' });
  const socksBound = await socks.listen();
  o.onUp('demo SOCKS5 proxy', () => socks.close());

  const t0 = performance.now();
  const fleet = demoFleet(bound, socksBound, { tlsPort: o.demoTarget.tlsPort });
  for (const p of fleet) {
    const res = await api.call<{ error?: string }>('POST', '/v1/proxies', p);
    if (res.status !== 201 && res.json.error !== 'already_exists') {
      throw new Error(`creating ${p.name} answered ${res.status} ${JSON.stringify(res.json)}`);
    }
  }
  o.progress(`demo fleet: created ${fleet.map((p) => p.name).join(', ')}; waiting for Ready`);

  const phases = new Map<string, string>();
  let last: ProxyJson[] = [];
  const deadline = Date.now() + (o.readyTimeoutMs ?? 180_000);
  while (Date.now() < deadline && !o.stopping()) {
    const res = await api.call<{ proxies: ProxyJson[] }>('GET', `/v1/proxies?attr.pool=${DEMO_POOL}`);
    last = res.json.proxies ?? [];
    for (const p of last) {
      if (phases.get(p.name) !== p.status.phase) {
        phases.set(p.name, p.status.phase);
        o.progress(`  ${p.name.padEnd(14)} ${p.status.phase}`);
      }
    }
    if (last.length === fleet.length && last.every((p) => p.status.phase === 'Ready')) break;
    await sleep(500);
  }
  if (o.stopping()) return;
  const ready = last.filter((p) => p.status.phase === 'Ready');
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  if (ready.length === fleet.length)
    o.progress(`demo fleet Ready: ${ready.length}/${fleet.length} in ${secs}s`);
  else {
    o.progress(`demo fleet: only ${ready.length}/${fleet.length} Ready after ${secs}s; the others:`);
    for (const p of last.filter((x) => x.status.phase !== 'Ready')) {
      const why = p.status.conditions.find((c) => c.status !== 'True')?.message ?? '';
      o.progress(`  ${p.name} ${p.status.phase} ${why}`);
    }
  }

  // Ready is the control plane's word; the gateway routes over a pool proxy only once a snapshot carrying
  // it has reached it (the next snapshot pass). The printed gateway lines work from the moment they show.
  const pool = fleet.filter((p) => p.spec.gatewayPool === true).length;
  if (o.gatewayUrl && o.gatewayProxyUrl && pool > 0) await waitForGatewayPool(o, o.gatewayUrl, pool);
  if (o.stopping()) return;

  const managed = last.find((p) => p.name === fleet[0]!.name)?.status.providerId;
  o.print(
    demoInstructions({
      apiUrl: o.apiUrl,
      target: hostPort(o.demoTarget),
      ...(target.tlsUrl && certificate
        ? { tlsTarget: `${o.demoTarget.host}:${o.demoTarget.tlsPort}`, caFile: certificate.certPath }
        : {}),
      gatewayProxyUrl: o.gatewayProxyUrl,
      fleetUrl: fleetPageUrl(o.apiUrl, o.adminToken),
      killCommand: managed
        ? `curl -X POST ${o.computeUrl}/admin/projects/${o.projectId}/${managed}/proxy/kill`
        : undefined,
    }),
  );
}

/** Waits (bounded) until the gateway's snapshot carries `pool` proxies; says so, or that it did not yet. */
async function waitForGatewayPool(o: DemoOptions, gatewayUrl: string, pool: number): Promise<void> {
  const carried = async () => {
    try {
      const res = await fetch(`${gatewayUrl}/healthz`, { signal: AbortSignal.timeout(5_000) });
      const body = (await res.json()) as { snapshot?: { proxies?: number } | null };
      return body.snapshot?.proxies ?? 0;
    } catch {
      return 0;
    }
  };
  const deadline = Date.now() + (o.gatewayTimeoutMs ?? 120_000);
  let n = await carried();
  while (n < pool && Date.now() < deadline && !o.stopping()) {
    await sleep(500);
    n = await carried();
  }
  if (n >= pool) o.progress(`gateway carries the demo pool: ${n} proxies in its snapshot`);
  else
    o.progress(
      `gateway carries ${n} of the demo pool's ${pool} proxies so far (its next snapshot brings the rest)`,
    );
}

/** main.ts's call: the demo wired to the running plane; failures are reported, never fatal. */
export async function demoStep(
  opts: PlaneOptions,
  plane: RunningPlane,
  ctx: { progress(line: string): void; teardown: Teardown },
): Promise<void> {
  const url = (name: string) => plane.endpoints.find((e) => e.name === name)?.url;
  try {
    await runDemo({
      apiUrl: plane.exports.PROXYPLANE_API_URL ?? url('api')!,
      adminToken: plane.exports.PROXYPLANE_ADMIN_TOKEN ?? process.env.PROXYPLANE_ADMIN_TOKEN,
      computeUrl: url('compute')!,
      secretManagerHost: plane.exports.SECRET_MANAGER_EMULATOR_HOST!,
      projectId: opts.projectId,
      demoTarget: planeLayout(opts.portOffset).ports.demoTarget,
      stateDir: opts.stateDir,
      gatewayProxyUrl: plane.exports.PROXYPLANE_GATEWAY_PROXY_URL ?? url('gateway-proxy'),
      gatewayUrl: url('gateway'),
      progress: ctx.progress,
      print: (text) => console.log(text),
      onUp: (name, stop) => ctx.teardown.add(name, stop, Layer.ourEmulators),
      stopping: () => ctx.teardown.stopping,
    });
  } catch (err) {
    if (ctx.teardown.stopping) return;
    const detail =
      (err as { code?: string }).code === 'EADDRINUSE' ? 'its port is taken' : (err as Error).message;
    ctx.progress(`demo fleet failed (${detail}); the plane keeps running. --no-demo skips the demo.`);
  }
}
