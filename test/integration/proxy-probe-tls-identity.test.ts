// An https check verifies the SITE's certificate, never the proxy's address: with a site whose
// certificate names only its own IP (127.0.0.2; its subject is not "localhost", Node's last resort for a
// name) behind proxies on 127.0.0.1, a probe that checked the
// certificate against the socket's host (the proxy) failed every such check with ERR_TLS_CERT_ALTNAME_INVALID
// — through HTTP and SOCKS5 proxies alike. Run in a child process so that NODE_EXTRA_CA_CERTS can make the
// test certificate trusted, as a real one is (rejectUnauthorized stays on).
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSelfSignedCert } from '../../emulators/demo-target/certificate.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { type EchoTarget, startTlsEchoTarget } from '../../emulators/forward-proxy/testing.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';

let dir: string;
let certPath: string;
let site: EchoTarget;
const proxies: ForwardProxy[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'probe-tls-identity-'));
  const cert = await makeSelfSignedCert(dir, 1, 'IP:127.0.0.2', 'site.test');
  certPath = cert.certPath;
  site = await startTlsEchoTarget(cert, '127.0.0.2');
});

afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await site?.close();
  await rm(dir, { recursive: true, force: true });
});

async function probeInChild(proxy: ForwardProxy): Promise<{ ok: boolean; failure: unknown }> {
  const script = join(dir, `probe-${proxy.protocol}.mts`);
  const probeModule = join(repoRoot, 'shared/src/adapters/probe/proxy-probe.ts');
  await writeFile(
    script,
    `import { probeThroughProxy } from ${JSON.stringify(probeModule)};
const r = await probeThroughProxy(
  { host: '127.0.0.1', port: ${proxy.port}, credentials: 'u:p', protocol: '${proxy.protocol}' },
  { url: ${JSON.stringify(`${site.url}/healthz`)}, timeoutMs: 5000, expectedStatus: 200, rejectUnauthorized: true },
);
process.stdout.write(JSON.stringify({ ok: r.ok, failure: r.failure }));
`,
  );
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
    cwd: repoRoot,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: certPath },
    timeout: 30_000,
  });
  return JSON.parse(stdout) as { ok: boolean; failure: unknown };
}

describe('an https check through a proxy verifies the site, not the proxy', () => {
  it.each(['http', 'socks5'] as const)('through an %s proxy', async (protocol) => {
    const proxy = createForwardProxy({ protocol, credentials: 'u:p' });
    proxies.push(proxy);
    await proxy.listen();
    const seen = site.seen.length;
    expect(await probeInChild(proxy)).toEqual({ ok: true, failure: null });
    expect(site.seen.slice(seen).map((s) => s.url)).toEqual(['/healthz']);
  });
});
