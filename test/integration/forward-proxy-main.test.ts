// emulators/forward-proxy/main.ts runs one proxy on its own, with or without credentials.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import {
  connectViaProxy,
  type EchoTarget,
  readAll,
  requestViaProxy,
  startEchoTarget,
} from '../../emulators/forward-proxy/testing.js';
import { freePort } from '../../emulators/launcher/free-port.js';

let target: EchoTarget | undefined;
/** Every process a test started: a failed assertion must not leave one running. */
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await target?.close();
});

describe('forward-proxy main', () => {
  it('listens where told, checks --user/--pass, and exits 0 on SIGTERM', async () => {
    target = await startEchoTarget();
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'emulators/forward-proxy/main.ts',
        '--port',
        String(port),
        '--user',
        'u',
        '--pass',
        'p',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(child);
    const [first] = (await once(child.stdout!, 'data')) as [Buffer];
    expect(JSON.parse(first.toString().split('\n')[0]!)).toMatchObject({
      severity: 'INFO',
      url: `http://127.0.0.1:${port}`,
      auth: true,
      connectPorts: 'any',
    });
    const proxy = { host: '127.0.0.1', port };
    expect((await requestViaProxy(proxy, `${target.url}/x`, { auth: { user: 'u', pass: 'p' } })).status).toBe(
      200,
    );
    expect((await requestViaProxy(proxy, `${target.url}/x`)).status).toBe(407);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });

  it("--connect-ports limits CONNECT as a VM's squid does (403), and refuses a bad list", async () => {
    target ??= await startEchoTarget();
    const port = await freePort();
    const other = await freePort();
    const proc = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'emulators/forward-proxy/main.ts',
        '--port',
        String(port),
        '--connect-ports',
        `443,${target.port}`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(proc);
    const [first] = (await once(proc.stdout!, 'data')) as [Buffer];
    expect(JSON.parse(first.toString().split('\n')[0]!)).toMatchObject({ connectPorts: [443, target.port] });
    const proxy = { host: '127.0.0.1', port };
    const tunnel = await connectViaProxy(proxy, `${target.host}:${target.port}`);
    expect(tunnel.status).toBe(200);
    tunnel.socket.write('GET /listed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await readAll(tunnel.socket)).toContain('"url":"/listed"');
    expect((await connectViaProxy(proxy, `127.0.0.1:${other}`)).status).toBe(403);
    expect((await requestViaProxy(proxy, `${target.url}/plain`)).status).toBe(200);
    proc.kill('SIGTERM');
    expect((await once(proc, 'exit'))[0]).toBe(0);

    const bad = spawn(
      process.execPath,
      ['--import', 'tsx', 'emulators/forward-proxy/main.ts', '--port', '0', '--connect-ports', '443,https'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.push(bad);
    let stderr = '';
    bad.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    expect((await once(bad, 'exit'))[0]).toBe(1);
    expect(stderr).toContain('invalid --connect-ports');
  });
});
