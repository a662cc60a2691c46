// docs/examples/crawler.ts, run as a crawler would run it: against the API process (main.ts), through a
// real forward proxy that demands the credentials only the lease response carries — read from the Secret
// Manager emulator by the real client — to a local page.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { Server as ProxyServer } from 'proxy-chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { startSecretManagerEmulator } from '../../emulators/secret-manager/server.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { testProjectId } from '../support/emulators.js';
import { type ApiProcess, proxy, startApiProcess, writeFleet } from '../support/leases.js';

const run = promisify(execFile);
const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKEN = 'example-crawler-token-01';
let target: Server;
let targetUrl: string;
let forward: ProxyServer;
// An external SOCKS5 proxy (attribute kind=socks) wanting the same credentials over RFC 1929.
let socks: ForwardProxy;
let service: ApiProcess;
let secretManager: Awaited<ReturnType<typeof startSecretManagerEmulator>>;
const seenByProxy: string[] = [];

beforeAll(async () => {
  target = createServer((req, res) => {
    res.writeHead(req.url === '/limited' ? 429 : 200, { 'content-type': 'text/plain' });
    res.end(req.url === '/limited' ? 'slow down' : 'hello from the target');
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  const address = target.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  targetUrl = `http://127.0.0.1:${address.port}`;

  forward = new ProxyServer({
    port: 0,
    host: '127.0.0.1',
    prepareRequestFunction: ({ username, password, hostname }) => {
      seenByProxy.push(`${username}:${password}@${hostname}`);
      return { requestAuthentication: username !== 'crawl' || password !== 'pa%ss:w@rd#' };
    },
  });
  await forward.listen();

  socks = createForwardProxy({ protocol: 'socks5', credentials: 'crawl:pa%ss:w@rd#' });
  await socks.listen();

  const p = proxy('demo', { external: true, attributes: { kind: 'http' } });
  const r = proxy('res', { external: true, attributes: { kind: 'socks' } });
  const external = (host: string, port: number, protocol: 'http' | 'socks5') => ({
    mode: 'external',
    endpoint: { host, port, protocol },
    credentialsRef: { secret: 'demo-creds', version: 'latest' },
  });
  await writeFleet(db, [
    { ...p, spec: { ...p.spec, ...external('127.0.0.1', forward.port, 'http') } as typeof p.spec },
    { ...r, spec: { ...r.spec, ...external(socks.host, socks.port, 'socks5') } as typeof r.spec },
  ]);
  secretManager = await startSecretManagerEmulator({ log: () => {} });
  const endpoint = `${secretManager.host}:${secretManager.port}`;
  const client = createSecretManagerClient(endpoint);
  await client.createSecret({
    parent: `projects/${projectId}`,
    secretId: 'demo-creds',
    secret: { replication: { automatic: {} } },
  });
  await client.addSecretVersion({
    parent: `projects/${projectId}/secrets/demo-creds`,
    // Characters a URL must escape in the password, and the newline `echo … | gcloud` leaves (not part of it).
    payload: { data: Buffer.from('crawl:pa%ss:w@rd#\n') },
  });
  await client.close();
  service = await startApiProcess({
    GOOGLE_CLOUD_PROJECT: projectId,
    DISCOVERY_TOKENS: `example:${TOKEN}`,
    SECRET_MANAGER_EMULATOR_HOST: endpoint,
  });
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await secretManager?.stop();
  await forward?.close(true);
  await socks?.close();
  await new Promise((r) => target?.close(r));
  await db.terminate();
});

function withoutProxyplaneVars(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('PROXYPLANE_')));
}

const crawl = (
  path: string,
  vars: Record<string, string> = { PROXYPLANE_URL: service.url, PROXYPLANE_TOKEN: TOKEN },
  selector = 'kind=http',
  script = 'docs/examples/crawler.ts',
) =>
  run(process.execPath, ['--import', 'tsx', script, `${targetUrl}${path}`, selector], {
    // Not the developer's own PROXYPLANE_URL / PROXYPLANE_TOKEN: each case says which variables it has.
    env: { ...withoutProxyplaneVars(process.env), ...vars },
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );

describe('docs/examples/crawler.ts', () => {
  it('leases, fetches through the authenticated proxy, reports ok and releases', async () => {
    const out = await crawl('/page');
    expect(out.stderr).toContain('reported ok');
    expect(out).toMatchObject({ code: 0, stdout: 'hello from the target' });
    expect(seenByProxy).toContain('crawl:pa%ss:w@rd#@127.0.0.1');
    const leases = await db.collection(LEASE_COLLECTIONS.leases).get();
    expect(leases.size).toBe(1);
    expect(leases.docs[0]!.get('releasedAt')).toBeInstanceOf(Timestamp);
    expect(leases.docs[0]?.get('target')).toBe(new URL(targetUrl).host);
  });

  it('leases a SOCKS5 proxy (a socks5:// URL) and fetches through it with the same credentials', async () => {
    const before = socks.stats();
    const out = await crawl('/page', undefined, 'kind=socks');
    expect(out).toMatchObject({ code: 0, stdout: 'hello from the target' });
    expect(out.stderr).toContain('leased res');
    expect(socks.stats().tunnels - before.tunnels).toBe(1);
    expect(socks.stats().authFailures).toBe(before.authFailures);
  });

  it('runs on the variables npm start exports alone (PROXYPLANE_API_URL, PROXYPLANE_CRAWLER_TOKEN)', async () => {
    const out = await crawl('/page', { PROXYPLANE_API_URL: service.url, PROXYPLANE_CRAWLER_TOKEN: TOKEN });
    expect(out).toMatchObject({ code: 0, stdout: 'hello from the target' });
    expect(out.stderr).toContain('reported ok');
  });

  it('selects by an attribute value with "=" in it whole, and refuses an argument that is no attr=value', async () => {
    // No proxy has kind "http=x": not the demo proxy (kind=http) the value cut at its second "=" names.
    const whole = await crawl('/page', undefined, 'kind=http=x');
    expect(whole.code).toBe(2);
    expect(whole.stderr).toContain('no proxy available');
    // "kind" alone selected nothing and leased any proxy; it is a mistake, said before any lease.
    const bare = await crawl('/page', undefined, 'kind');
    expect(bare.code).toBe(64);
    expect(bare.stderr).toContain('attr=value');
    expect(bare.stderr).not.toContain('leased');
  });

  it('reports a 429 as rate_limited, which cools the proxy down for that site', async () => {
    const out = await crawl('/limited');
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('reported rate_limited');
    const cooldowns = await db.collection(LEASE_COLLECTIONS.cooldowns).get();
    expect(cooldowns.docs.map((d) => [d.get('proxy'), d.get('target'), d.get('reason')])).toEqual([
      // The site: the target's host, whatever its port.
      ['demo', new URL(targetUrl).hostname, 'rate_limited'],
    ]);
    const again = await crawl('/page');
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('"inCooldown":1');
  });

  it('runs from a checkout under a path with a space, reached through a symlink (it is not imported)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'crawler-'));
    const checkout = join(dir, 'my checkout');
    await symlink(repoRoot, checkout);
    try {
      // No API at that address: the crawl fails loudly — it ran, rather than exiting 0 having done nothing.
      const unreachable = { PROXYPLANE_URL: 'http://127.0.0.1:9', PROXYPLANE_TOKEN: TOKEN };
      const out = await crawl('/page', unreachable, undefined, join(checkout, 'docs/examples/crawler.ts'));
      expect(out.code).toBe(1);
      expect(out.stderr).toMatch(/ECONNREFUSED|unreachable|fetch failed/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
