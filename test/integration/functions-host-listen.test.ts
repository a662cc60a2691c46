// A hosted function listens where firebase.json's `emulators.functions.host` says (127.0.0.1), as every
// other piece of the local plane does: the functions-framework CLI itself listens on every interface, which
// would put the plane's unauthenticated push endpoints (reconcile, gc, …) on the developer's network.

import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HostedFunction, hostFunction } from '../../emulators/functions-host/host.js';
import { tryConnect } from '../../emulators/functions-host/wait-port.js';
import { freePort } from '../../emulators/launcher/free-port.js';

const connects = (host: string, port: number) => tryConnect(host, port, 2000);

describe('hostFunction', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pp-fnhost-'));
  let fn: HostedFunction;

  beforeAll(async () => {
    fn = await hostFunction({
      fn: { name: 'recorder', source: 'test/fixtures/functions/recorder', target: 'record' },
      port: await freePort(),
      host: '127.0.0.1',
      env: { RECORDER_LOG: join(dir, 'events.jsonl') },
      logFile: join(dir, 'function.log'),
    });
  }, 90_000);

  afterAll(async () => {
    await fn?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('listens on its host only, not on every interface', async () => {
    expect(await connects('127.0.0.1', fn.port)).toBe(true);
    // Another loopback address reaches a socket bound to 0.0.0.0 or ::, never one bound to 127.0.0.1.
    expect(await connects('127.0.0.2', fn.port)).toBe(false);
  });

  // Readiness is the function's own listen, not a port that accepts: a port chosen free and taken by
  // another process before the function listened answered the plane's wait while the function died of
  // EADDRINUSE, and its pushes went to the other process.
  it('is not ready on a port another process listens on: it fails to start, saying so', async () => {
    const squatter = createServer((socket) => socket.destroy());
    const port = await freePort();
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
    try {
      await expect(
        hostFunction({
          fn: { name: 'recorder', source: 'test/fixtures/functions/recorder', target: 'record' },
          port,
          host: '127.0.0.1',
          env: { RECORDER_LOG: join(dir, 'squatted.jsonl') },
          logFile: join(dir, 'squatted.log'),
        }),
      ).rejects.toThrow(/function recorder exited before it was ready/);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  }, 90_000);
});
