import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { loadLocalPorts } from '../../shared/src/config/local-ports.js';
import {
  assertNotHeldOnWildcard,
  assertPortsFree,
  offsetPorts,
  PortInUseError,
  WildcardPortError,
} from './ports.js';

describe('offsetPorts', () => {
  it('adds the offset to every firebase.json port and keeps the hosts', () => {
    const base = loadLocalPorts();
    const shifted = offsetPorts(base, 1000);
    expect(shifted.pubsub).toEqual({ host: base.pubsub.host, port: base.pubsub.port + 1000 });
    expect(shifted.functions.ports.reconcile).toBe(base.functions.ports.reconcile! + 1000);
    expect(shifted.gateway.proxyPort).toBe(base.gateway.proxyPort + 1000);
    expect(base).toMatchObject(offsetPorts(base, 0) as unknown as Record<string, unknown>);
  });
});

describe('assertPortsFree', () => {
  let held: Server;
  let port = 0;
  afterAll(() => new Promise<void>((r) => held.close(() => r())));

  it('names the port and the firebase.json key of every port already taken', async () => {
    held = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    port = (held.address() as { port: number }).port;
    const err = await assertPortsFree([{ key: 'emulators.api.port', host: '127.0.0.1', port }]).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(PortInUseError);
    expect(err.message).toBe(
      `port ${port} on 127.0.0.1 (firebase.json emulators.api.port) is already in use`,
    );
    expect(err.claims).toEqual([{ key: 'emulators.api.port', host: '127.0.0.1', port }]);
  });

  it('passes when the ports are free', async () => {
    const free = createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const freePort = (free.address() as { port: number }).port;
    await new Promise<void>((r) => free.close(() => r()));
    await expect(assertPortsFree([{ key: 'k', host: '127.0.0.1', port: freePort }])).resolves.toBeUndefined();
  });
});

describe('assertNotHeldOnWildcard', () => {
  const listen = async (host: string) => {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, host, r));
    return { srv, port: (srv.address() as { port: number }).port };
  };
  const close = (srv: Server) => new Promise<void>((r) => srv.close(() => r()));

  it('refuses a VM proxy port some process holds on 0.0.0.0 (no 127.x.y.z can bind it), naming it', async () => {
    const { srv, port } = await listen('0.0.0.0');
    try {
      const err = await assertNotHeldOnWildcard(port).catch((e) => e);
      expect(err).toBeInstanceOf(WildcardPortError);
      expect(err.message).toContain(`port ${port} is held on the wildcard address`);
      expect(err.message).toContain(`ss -ltnp 'sport = :${port}'`);
    } finally {
      await close(srv);
    }
  });

  it("passes when only single addresses hold the port (another plane's VMs), or nothing does", async () => {
    const { srv, port } = await listen('127.0.0.1');
    try {
      await expect(assertNotHeldOnWildcard(port)).resolves.toBeUndefined();
    } finally {
      await close(srv);
    }
    await expect(assertNotHeldOnWildcard(port)).resolves.toBeUndefined();
  });
});
