// An emulated VM whose boot is still reading its credentials when the emulator stops (or is reset) must
// never start its proxy afterwards: stop() promises that nothing of the emulator listens once it returns,
// and a test that resets between cases must not find a dead case's proxy on an address it hands out again.
import { Server } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { computeClients, instanceBody } from '../../emulators/compute/testing.js';

const PROJECT = 'stop-while-booting';
const ZONE = 'us-central1-a';
const SECRET = `projects/${PROJECT}/secrets/creds/versions/1`;

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let called!: () => void;
  const asked = new Promise<void>((resolve) => {
    called = resolve;
  });
  return { open, opened, asked, called };
}

let emu: ComputeEmulator | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await emu?.stop();
  emu = undefined;
});

async function bootingInstance(g: ReturnType<typeof gate>): Promise<{ address: string }> {
  emu = await startComputeEmulator({
    projectId: PROJECT,
    bootDelayMs: 10,
    resolveCredentials: async () => {
      g.called();
      await g.opened;
      return 'user:pass';
    },
  });
  const clients = computeClients(emu.endpoint);
  try {
    await clients.instances.insert({
      project: PROJECT,
      zone: ZONE,
      instanceResource: instanceBody('vm-1', { zone: ZONE, credentialsSecret: SECRET }),
    });
  } finally {
    await clients.close();
  }
  await g.asked;
  const [view] = emu.admin.instances({ project: PROJECT });
  return { address: view!.address };
}

/** Every listen on `address` from now on. */
function listensOn(address: string): unknown[][] {
  const calls: unknown[][] = [];
  const listen = Server.prototype.listen;
  vi.spyOn(Server.prototype, 'listen').mockImplementation(function (this: Server, ...args: unknown[]) {
    if (args.includes(address)) calls.push(args);
    return (listen as (...a: unknown[]) => Server).apply(this, args);
  });
  return calls;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

describe('compute emulator: a boot still reading its credentials', () => {
  it('starts no proxy once the emulator has stopped', async () => {
    const g = gate();
    const { address } = await bootingInstance(g);
    const listens = listensOn(address);
    await emu!.stop();
    g.open();
    await settle();
    expect(listens).toEqual([]);
  });

  it('starts no proxy once the emulator was reset', async () => {
    const g = gate();
    const { address } = await bootingInstance(g);
    const listens = listensOn(address);
    await emu!.admin.reset();
    g.open();
    await settle();
    expect(listens).toEqual([]);
  });
});
