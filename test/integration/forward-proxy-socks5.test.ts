// The forward proxy speaking SOCKS5 (RFC 1928 + RFC 1929): what tests and the local plane stand external
// SOCKS5 proxies up with. Clients are the `socks` package (what the gateway and the probe use) and raw
// bytes where the exact reply code is the point.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { SocksClient } from 'socks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import {
  type EchoTarget,
  eventually,
  readAll,
  startEchoTarget,
} from '../../emulators/forward-proxy/testing.js';
import { freePort } from '../../emulators/launcher/free-port.js';

let target: EchoTarget;
const proxies: ForwardProxy[] = [];
let child: ChildProcess | undefined;

beforeAll(async () => {
  target = await startEchoTarget();
});
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});
afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await target.close();
});

async function socksProxy(opts: Parameters<typeof createForwardProxy>[0] = {}): Promise<ForwardProxy> {
  const proxy = createForwardProxy({ protocol: 'socks5', credentials: 'u:p', ...opts });
  proxies.push(proxy);
  await proxy.listen();
  return proxy;
}

function tunnel(proxy: ForwardProxy, host: string, port: number, userId = 'u', password = 'p') {
  return SocksClient.createConnection({
    proxy: { host: proxy.host, port: proxy.port, type: 5, userId, password },
    command: 'connect',
    destination: { host, port },
    timeout: 5000,
  });
}

async function getOver(socket: Socket, path: string): Promise<string> {
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\nConnection: close\r\n\r\n`);
  return readAll(socket);
}

/** Raw client: sends `bytes` in order, each after the previous answer, and returns every answer. */
async function exchange(proxy: ForwardProxy, steps: number[][], expectClose = true): Promise<Buffer[]> {
  const socket = connect({ host: proxy.host, port: proxy.port });
  await once(socket, 'connect');
  const answers: Buffer[] = [];
  for (const bytes of steps) {
    socket.write(Buffer.from(bytes));
    const [chunk] = (await once(socket, 'data')) as [Buffer];
    answers.push(chunk);
  }
  if (expectClose) await once(socket, 'close');
  socket.destroy();
  return answers;
}

const ipv4Request = (port: number, cmd = 0x01) => [5, cmd, 0, 1, 127, 0, 0, 1, port >> 8, port & 0xff];
const login = [1, 1, ...Buffer.from('u'), 1, ...Buffer.from('p')];

describe('forward proxy over SOCKS5', () => {
  it('tunnels a request with username/password auth, then holds no socket', async () => {
    const proxy = await socksProxy();
    const { socket } = await tunnel(proxy, '127.0.0.1', target.port);
    const text = await getOver(socket, '/socks');
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    expect(text).toContain('"url":"/socks"');
    expect(proxy.stats()).toMatchObject({ tunnels: 1, authFailures: 0 });
    await eventually(() => proxy.openSockets() === 0, 'every socket closed');
  });

  it('resolves a domain name (ATYP 3) itself', async () => {
    const proxy = await socksProxy();
    const { socket } = await tunnel(proxy, 'localhost', target.port);
    expect(await getOver(socket, '/by-name')).toMatch(/^HTTP\/1\.1 200/);
  });

  it('refuses wrong credentials (RFC 1929 status 1) and a client offering no method it takes', async () => {
    const proxy = await socksProxy();
    await expect(tunnel(proxy, '127.0.0.1', target.port, 'u', 'wrong')).rejects.toThrow(/auth/i);
    const [choice] = await exchange(proxy, [[5, 1, 0]]);
    expect([...choice!]).toEqual([5, 0xff]);
    expect(proxy.stats().authFailures).toBe(2);
    expect(target.seen.some((r) => r.url === '/never')).toBe(false);
  });

  it('an open proxy takes "no auth"', async () => {
    const proxy = await socksProxy({ credentials: null });
    const [choice, reply] = await exchange(proxy, [[5, 1, 0], ipv4Request(target.port)], false);
    expect([...choice!]).toEqual([5, 0]);
    expect(reply![1]).toBe(0);
  });

  it('answers a closed port "connection refused" (5) and BIND "command not supported" (7)', async () => {
    const proxy = await socksProxy();
    const closed = await freePort();
    const [, auth, refused] = await exchange(proxy, [[5, 1, 2], login, ipv4Request(closed)]);
    expect([...auth!]).toEqual([1, 0]);
    expect(refused![1]).toBe(5);
    const [, , bind] = await exchange(proxy, [[5, 1, 2], login, ipv4Request(target.port, 0x02)]);
    expect(bind![1]).toBe(7);
    await eventually(() => proxy.openSockets() === 0, 'every socket closed');
  });

  it('with connectPorts, answers another port "not allowed by ruleset" (2) and tunnels a listed one', async () => {
    const proxy = await socksProxy({ connectPorts: [target.port] });
    const other = await freePort();
    const [, , refused] = await exchange(proxy, [[5, 1, 2], login, ipv4Request(other)]);
    expect(refused![1]).toBe(2);
    expect(proxy.stats().forbidden).toBe(1);
    const { socket } = await tunnel(proxy, '127.0.0.1', target.port);
    expect(await getOver(socket, '/listed')).toContain('"url":"/listed"');
  });

  it('closes a handshake that does not complete in time, and answers nothing while hanging', async () => {
    const proxy = await socksProxy({ headersTimeoutMs: 300 });
    const slow = connect({ host: proxy.host, port: proxy.port });
    slow.write(Buffer.from([5]));
    await once(slow, 'close');
    expect(proxy.stats().badRequests).toBe(1);

    proxy.hang(true);
    const hung = connect({ host: proxy.host, port: proxy.port });
    hung.write(Buffer.from([5, 1, 2]));
    let answered = false;
    hung.on('data', () => {
      answered = true;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBe(false);
    hung.destroy();
  });

  it('main.ts --protocol socks5 serves SOCKS5 and says so', async () => {
    const port = await freePort();
    child = spawn(
      process.execPath,
      ['--import', 'tsx', 'emulators/forward-proxy/main.ts', '--port', String(port), '--protocol', 'socks5'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [first] = (await once(child.stdout!, 'data')) as [Buffer];
    expect(JSON.parse(first.toString().split('\n')[0]!)).toMatchObject({
      url: `socks5://127.0.0.1:${port}`,
      auth: false,
    });
    const { socket } = await SocksClient.createConnection({
      proxy: { host: '127.0.0.1', port, type: 5 },
      command: 'connect',
      destination: { host: '127.0.0.1', port: target.port },
      timeout: 5000,
    });
    expect(await getOver(socket, '/main')).toMatch(/^HTTP\/1\.1 200/);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });
});
