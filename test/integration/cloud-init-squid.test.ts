// Debian's squid on the rendered configuration, driven over real sockets: it demands credentials, takes
// the ones the script installed, refuses the VM's own networks, listens on the proxy port only, and
// hides the client from the target (no Via, no X-Forwarded-For, no Proxy-Authorization forwarded).
import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';
import type { GroupProcess } from '../../emulators/launcher/process-group.js';
import { renderSquidConf } from '../../shared/src/domain/cloud-init/squid-conf.js';
import { renderDefaultCloudInit } from '../../shared/src/domain/cloud-init/startup-script.js';
import { isRoot, toolsMissing } from '../support/debian-tools.js';
import { runScriptFunctions, scratchDir, startSquid } from './cloud-init-support.js';

const why = !isRoot() ? 'not root' : await toolsMissing(['squid', 'ss', 'curl', 'openssl']);

const USER = 'alice';
const PASSWORD = 'Squid-Pa55:with-colon';
const PERCENT_USER = 'percy';
const PERCENT_PASSWORD = 'p%41ss%%100%';
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

interface ProxyAnswer {
  status: number;
  body: string;
}

/** An absolute-URI request through the proxy, as a crawler sends it. */
function viaProxy(
  proxyPort: number,
  url: string,
  auth?: string,
  headers: Record<string, string> = {},
): Promise<ProxyAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: proxyPort,
        path: url,
        headers: { ...headers, ...(auth ? { 'proxy-authorization': auth } : {}) },
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A CONNECT tunnel, then a plain GET inside it; resolves with the CONNECT status and the tunnelled answer. */
function tunnel(proxyPort: number, target: string, auth: string): Promise<{ status: number; inner: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: proxyPort,
      method: 'CONNECT',
      path: target,
      headers: { 'proxy-authorization': auth },
    });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        return resolve({ status: res.statusCode ?? 0, inner: '' });
      }
      let inner = '';
      socket.on('data', (d: Buffer) => {
        inner += d.toString();
      });
      socket.on('end', () => resolve({ status: 200, inner }));
      socket.write(`GET /tunnelled HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Local ports `pid` listens on (TCP) or has bound (UDP), from `ss`: State Recv-Q Send-Q Local Peer Process. */
function listeningPorts(pid: number, proto: 't' | 'u'): number[] {
  const out = spawnSync('ss', [`-Hl${proto}np`], { encoding: 'utf8' }).stdout;
  const ports = out
    .split('\n')
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => {
      const local = line.trim().split(/\s+/)[3] ?? '';
      return Number(local.slice(local.lastIndexOf(':') + 1));
    });
  return [...new Set(ports)].sort((a, b) => a - b);
}

describe.skipIf(why !== '')(`squid on the rendered configuration${why ? ` (skipped: ${why})` : ''}`, () => {
  const dir = scratchDir('pp-squid-');
  const passwd = join(dir, 'proxyplane.passwd');
  const seen: IncomingHttpHeaders[] = [];
  let target: Server;
  let targetPort: number;
  let strictPort: number;
  let openPort: number;
  let strict: GroupProcess;
  let open: GroupProcess;
  let scriptFile: string;

  beforeAll(async () => {
    target = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello from ${req.url}`);
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetPort = (target.address() as AddressInfo).port;
    [strictPort, openPort] = [await freePort(), await freePort()];

    // The password file exactly as the startup script writes it.
    scriptFile = join(dir, 'startup.sh');
    writeFileSync(
      scriptFile,
      renderDefaultCloudInit({ port: strictPort, credentialsSecret: 'projects/p/secrets/s' }),
    );
    const w = await runScriptFunctions(scriptFile, 'PROXY_USER=$U; PROXY_PASSWORD=$P; write_passwd "$F"', {
      U: USER,
      P: PASSWORD,
      F: passwd,
    });
    expect(w.code, w.stderr).toBe(0);
    // A second user whose password holds what reads like a percent-escape: squid escapes the password it
    // hands basic_ncsa_auth, which unescapes it, so `%41` stays `%41` (not `A`).
    const other = join(dir, 'other.passwd');
    const w2 = await runScriptFunctions(scriptFile, 'PROXY_USER=$U; PROXY_PASSWORD=$P; write_passwd "$F"', {
      U: PERCENT_USER,
      P: PERCENT_PASSWORD,
      F: other,
    });
    expect(w2.code, w2.stderr).toBe(0);
    appendFileSync(passwd, readFileSync(other));

    // The production defaults, and a variant that lets squid reach the loopback target.
    strict = await startSquid(
      dir,
      'ppstrict',
      renderSquidConf({ port: strictPort, passwdFile: passwd }),
      strictPort,
    );
    open = await startSquid(
      dir,
      'ppopen',
      renderSquidConf({
        port: openPort,
        passwdFile: passwd,
        blockedDestinations: [],
        connectPorts: [targetPort],
      }),
      openPort,
    );
  });
  afterAll(async () => {
    await strict?.stop(5_000);
    await open?.stop(5_000);
    await new Promise<void>((r) => (target ? target.close(() => r()) : r()));
  });

  it('demands credentials (407) and refuses wrong ones', async () => {
    const url = `http://127.0.0.1:${targetPort}/`;
    expect((await viaProxy(openPort, url)).status).toBe(407);
    expect((await viaProxy(openPort, url, basic(USER, 'wrong'))).status).toBe(407);
    expect((await viaProxy(openPort, url, basic('mallory', PASSWORD))).status).toBe(407);
  });

  it('relays for the installed credentials, adding nothing that reveals the client or the proxy', async () => {
    seen.length = 0;
    const answer = await viaProxy(openPort, `http://127.0.0.1:${targetPort}/page?q=1`, basic(USER, PASSWORD));
    expect(answer).toEqual({ status: 200, body: 'hello from /page?q=1' });
    expect(seen).toHaveLength(1);
    expect(seen[0]).not.toHaveProperty('via');
    expect(seen[0]).not.toHaveProperty('x-forwarded-for');
    expect(seen[0]).not.toHaveProperty('forwarded');
    expect(seen[0]).not.toHaveProperty('proxy-authorization');
    // squid's own `Cache-Control: max-age=259200` (its 3-day limit) marks a squid in the path.
    expect(seen[0]).not.toHaveProperty('cache-control');
  });

  it('takes a password holding % as written (%41 is not read as A)', async () => {
    const url = `http://127.0.0.1:${targetPort}/`;
    expect((await viaProxy(openPort, url, basic(PERCENT_USER, PERCENT_PASSWORD))).status).toBe(200);
    expect((await viaProxy(openPort, url, basic(PERCENT_USER, 'pAss%%100%'))).status).toBe(407);
  });

  it('passes on a Cache-Control the client sent, as it was', async () => {
    seen.length = 0;
    const url = `http://127.0.0.1:${targetPort}/fresh`;
    const answer = await viaProxy(openPort, url, basic(USER, PASSWORD), { 'cache-control': 'no-cache' });
    expect(answer.status).toBe(200);
    expect(seen[0]?.['cache-control']).toBe('no-cache');
  });

  it('tunnels CONNECT to allowed ports only', async () => {
    const ok = await tunnel(openPort, `127.0.0.1:${targetPort}`, basic(USER, PASSWORD));
    expect(ok.status).toBe(200);
    expect(ok.inner).toContain('hello from /tunnelled');
    const refused = await tunnel(openPort, `127.0.0.1:${strictPort}`, basic(USER, PASSWORD));
    expect(refused.status).toBe(403);
  });

  it.each([
    ['loopback', (p: number) => `http://127.0.0.1:${p}/`],
    ['the metadata server', () => 'http://169.254.169.254/computeMetadata/v1/'],
    ['a private range', () => 'http://10.1.2.3/'],
    // Linux connects the unspecified address to the VM's own loopback.
    ['the IPv6 unspecified address', (p: number) => `http://[::]:${p}/`],
    // IPv6 forms that carry a refused IPv4 address, as the gateway's SSRF guard refuses them.
    ['the metadata server through NAT64', () => 'http://[64:ff9b::a9fe:a9fe]/computeMetadata/v1/'],
    ['loopback through 6to4', (p: number) => `http://[2002:7f00:1::1]:${p}/`],
    ['a private range through SIIT', () => 'http://[::ffff:0:a01:203]/'],
  ])('with the default configuration, refuses %s even to authenticated clients', async (_, url) => {
    seen.length = 0;
    expect((await viaProxy(strictPort, url(targetPort))).status).toBe(407);
    expect((await viaProxy(strictPort, url(targetPort), basic(USER, PASSWORD))).status).toBe(403);
    expect(seen).toHaveLength(0);
  });

  it('listens on the proxy port only: no ICP, HTCP or SNMP', () => {
    expect(listeningPorts(strict.pid, 't')).toEqual([strictPort]);
    for (const port of listeningPorts(strict.pid, 'u')) expect([3130, 4827, 3401]).not.toContain(port);
  });

  it("the script's own self-check passes against it, and fails for credentials squid does not hold", async () => {
    const good = await runScriptFunctions(scriptFile, 'PROXY_USER=$U; PROXY_PASSWORD=$P; self_check', {
      U: USER,
      P: PASSWORD,
    });
    expect(good.code, good.stderr).toBe(0);
    const bad = await runScriptFunctions(scriptFile, 'PROXY_USER=$U; PROXY_PASSWORD=$P; self_check', {
      U: USER,
      P: 'not-the-password',
      PROXYPLANE_METADATA_URL: 'http://127.0.0.1:9/none',
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('did not accept the installed credentials');
    expect(bad.stdout + bad.stderr).not.toContain('not-the-password');
  });
});
