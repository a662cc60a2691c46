// A hosted function listens where firebase.json's `emulators.functions.host` says (127.0.0.1), as every
// other piece of the local plane does: the functions-framework CLI itself listens on every interface, which
// would put the plane's unauthenticated push endpoints (reconcile, gc, …) on the developer's network.

import { mkdtempSync, rmSync } from 'node:fs';
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
});
