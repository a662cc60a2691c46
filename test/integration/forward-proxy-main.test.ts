// emulators/forward-proxy/main.ts runs one proxy on its own, with or without credentials.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { type EchoTarget, requestViaProxy, startEchoTarget } from '../../emulators/forward-proxy/testing.js';
import { freePort } from '../../emulators/launcher/free-port.js';

let child: ChildProcess | undefined;
let target: EchoTarget | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await target?.close();
});

describe('forward-proxy main', () => {
  it('listens where told, checks --user/--pass, and exits 0 on SIGTERM', async () => {
    target = await startEchoTarget();
    const port = await freePort();
    child = spawn(
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
    const [first] = (await once(child.stdout!, 'data')) as [Buffer];
    expect(JSON.parse(first.toString().split('\n')[0]!)).toMatchObject({
      severity: 'INFO',
      url: `http://127.0.0.1:${port}`,
      auth: true,
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
});
