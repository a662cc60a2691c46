// An emulated VM's proxy (what bootProxy starts) reaching targets that its own 127.x source cannot:
// IPv6 loopback here, and by the same rule anything off the machine (source-address.unit.test.ts). A
// target on 127.0.0.1 still sees the VM's own address, as the EGRESS tier expects.
import { createServer as createTcpServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectViaProxy,
  type EchoTarget,
  readAll,
  requestViaProxy,
  startEchoTarget,
} from '../forward-proxy/testing.js';
import { LoopbackPool } from './address-pool.js';
import { bootProxy } from './instance-proxy.js';
import { type InstanceSpec, METADATA_PROXY_PORT } from './instance-spec.js';
import { silentLog } from './log.js';

/** Whether this machine has IPv6 loopback (a container may have none). */
const ipv6 = await new Promise<boolean>((resolve) => {
  const probe = createTcpServer();
  probe.once('error', () => resolve(false));
  probe.listen(0, '::1', () => probe.close(() => resolve(true)));
});

/** A port free on every address, for the VM's proxy port metadata. */
const freePort = await new Promise<number>((resolve) => {
  const probe = createTcpServer();
  probe.listen(0, () => {
    const { port } = probe.address() as { port: number };
    probe.close(() => resolve(port));
  });
});

let v4: EchoTarget;
let v6: EchoTarget | undefined;
const vm = {
  spec: { name: 'pp-egress', metadata: [{ key: METADATA_PROXY_PORT, value: String(freePort) }] },
  address: '',
} as unknown as { spec: InstanceSpec; address: string };
let stop: () => Promise<void>;

beforeAll(async () => {
  v4 = await startEchoTarget('127.0.0.1');
  if (ipv6) v6 = await startEchoTarget('::1');
  const pool = new LoopbackPool({ first: '127.9.0.2', last: '127.9.255.254' });
  vm.address = pool.allocate()!;
  const boot = await bootProxy(vm, {
    pool,
    hostConnectPorts: [v4.port, ...(v6 ? [v6.port] : [])],
    log: silentLog,
  });
  if (!boot.ok) throw new Error(boot.error);
  stop = () => boot.proxy.close();
});

afterAll(async () => {
  await stop?.();
  await v4?.close();
  await v6?.close();
});

const proxy = () => ({ host: vm.address, port: freePort });

describe('an emulated VM egresses from its own address', () => {
  it('towards 127.0.0.1: the target sees the VM, not the host', async () => {
    const res = await requestViaProxy(proxy(), `${v4.url}/seen`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).remoteAddress).toBe(vm.address);
  });
});

describe.skipIf(!ipv6)(`an emulated VM reaches ::1${ipv6 ? '' : ' (skipped: no IPv6 loopback here)'}`, () => {
  it('opens a CONNECT tunnel to [::1]:port', async () => {
    const tunnel = await connectViaProxy(proxy(), `[::1]:${v6!.port}`);
    expect(tunnel.status).toBe(200);
    tunnel.socket.write('GET /tunnelled HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(await readAll(tunnel.socket)).toMatch(/^HTTP\/1\.1 200 .*"url":"\/tunnelled"/s);
  });

  it('forwards an absolute-form request to http://[::1]:port/', async () => {
    const res = await requestViaProxy(proxy(), `http://[::1]:${v6!.port}/forwarded`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ url: '/forwarded', remoteAddress: '::1' });
  });
});
