// Something listening on the VMs' proxy port on the wildcard address (Debian's squid on 0.0.0.0:3128,
// started by systemd once a test apt-installed it) makes Linux refuse that port on every 127.x.y.z. A
// VM must not walk the address pool trying (each address it left stayed taken for good, three of them
// exhausting this range): it stays on its own address, without a proxy, and says what holds the port.
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import {
  computeClients,
  gceErrorOf,
  instanceBody,
  operationOf,
  waitForOperation,
} from '../../emulators/compute/testing.js';
import { freePort } from '../../emulators/launcher/free-port.js';

const project = 'demo-wildcard-port';
const zone = 'us-central1-a';
/** Three usable addresses: a boot that used up more than its own would leave no room for two more VMs. */
const range = { first: '127.93.0.2', last: '127.93.0.4' };

let emu: ComputeEmulator;
let clients: ReturnType<typeof computeClients>;
let wildcard: Server;
let heldPort: number;
const logged: Array<{ message: string; fields?: Record<string, unknown> }> = [];

beforeAll(async () => {
  wildcard = createServer((s) => s.destroy());
  await new Promise<void>((resolve) => wildcard.listen(0, '0.0.0.0', resolve));
  heldPort = (wildcard.address() as { port: number }).port;
  emu = await startComputeEmulator({
    bootDelayMs: 50,
    deleteDelayMs: 50,
    stopDelayMs: 50,
    addressRange: range,
    log: (_severity, message, fields) => logged.push({ message, fields }),
  });
  clients = computeClients(emu.endpoint);
});

afterAll(async () => {
  await clients?.close();
  await emu?.stop();
  if (wildcard.listening) await new Promise<void>((resolve) => wildcard.close(() => resolve()));
});

async function insertAndWait(name: string, proxyPort: number) {
  const [op] = await clients.instances.insert({
    project,
    zone,
    instanceResource: instanceBody(name, { zone, proxyPort }),
  });
  return waitForOperation(clients.zoneOps, project, zone, operationOf(op).name!);
}

describe('a proxy port held on the wildcard address', () => {
  it('leaves the VM on its own address without a proxy, naming the holder, and the pool intact', async () => {
    await insertAndWait('pp-wildcard', heldPort);
    const view = emu.admin.instance(project, zone, 'pp-wildcard');
    expect(view.status).toBe('RUNNING');
    expect(view.address).toBe(range.first);
    expect(view.proxy.url).toBeNull();
    expect(view.proxy.error).toContain(`port ${heldPort} is held on the wildcard address`);
    expect(logged.filter((l) => l.message === 'instance address busy, moving to another')).toEqual([]);
    expect(logged).toContainEqual(
      expect.objectContaining({
        message: 'instance booted without a working proxy',
        fields: expect.objectContaining({ error: view.proxy.error }),
      }),
    );

    // The two other addresses of the range are still there for VMs on a port nobody holds.
    const freeProxyPort = await freePort();
    await insertAndWait('pp-free-1', freeProxyPort);
    await insertAndWait('pp-free-2', freeProxyPort);
    for (const name of ['pp-free-1', 'pp-free-2']) {
      expect(emu.admin.instance(project, zone, name).proxy.url).not.toBeNull();
    }
    const full = await clients.instances
      .insert({ project, zone, instanceResource: instanceBody('pp-one-too-many', { zone }) })
      .catch((e: unknown) => e);
    expect(gceErrorOf(full)).toMatchObject({ httpStatus: 403, reason: 'quotaExceeded' });
  });

  it('boots its proxy on the same address once the holder is gone (stop, start)', async () => {
    await new Promise<void>((resolve) => wildcard.close(() => resolve()));
    const [stop] = await clients.instances.stop({ project, zone, instance: 'pp-wildcard' });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(stop).name!);
    const [start] = await clients.instances.start({ project, zone, instance: 'pp-wildcard' });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(start).name!);
    const view = emu.admin.instance(project, zone, 'pp-wildcard');
    expect(view.proxy.url).toBe(`http://${range.first}:${heldPort}`);
    expect(view.proxy.error).toBeUndefined();
  });
});
