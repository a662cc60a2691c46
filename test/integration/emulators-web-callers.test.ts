// Our emulators listen on loopback with no authentication. A web page open in the developer's browser is
// on this machine too: a blind cross-site POST (text/plain, no preflight) or a DNS-rebinding name must not
// rotate a secret, read one, or kill an instance (emulators/launcher/local-caller.ts). Over real sockets.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startComputeEmulator } from '../../emulators/compute/server.js';
import { LocalScheduler } from '../../emulators/scheduler/local-scheduler.js';
import { createSchedulerApp } from '../../emulators/scheduler/server.js';
import { startSecretManagerEmulator } from '../../emulators/secret-manager/server.js';

type Emulators = {
  sm: Awaited<ReturnType<typeof startSecretManagerEmulator>>;
  compute: Awaited<ReturnType<typeof startComputeEmulator>>;
};
let e: Emulators;
beforeAll(async () => {
  e = {
    sm: await startSecretManagerEmulator({ log: () => {} }),
    compute: await startComputeEmulator({ log: () => {} }),
  };
});
afterAll(async () => {
  await e?.sm.stop();
  await e?.compute.stop();
});

/** A raw request with the headers a browser (or a rebinding page) would send. */
function send(endpoint: string, method: string, path: string, headers: Record<string, string>, body = '') {
  const [host, port] = endpoint.replace(/^https?:\/\//, '').split(':') as [string, string];
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host, port: Number(port), method, path, headers, setHost: false }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const SECRET = '/v1/projects/demo-web/secrets';
const create = JSON.stringify({ replication: { automatic: {} } });

describe('a request from a web page', () => {
  it('is refused by the Secret Manager emulator, which creates nothing; the same request from curl is taken', async () => {
    const local = { host: `127.0.0.1:${e.sm.port}`, 'content-type': 'text/plain' };
    const page = { ...local, origin: 'https://attacker.example' };
    const refused = await send(e.sm.url, 'POST', `${SECRET}?secretId=w1`, page, create);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('web page');
    const rebound = await send(e.sm.url, 'GET', `${SECRET}/w1`, {
      host: `rebind.attacker.example:${e.sm.port}`,
    });
    expect(rebound.status).toBe(403);
    expect((await send(e.sm.url, 'GET', `${SECRET}/w1`, local)).status).toBe(404);
    expect((await send(e.sm.url, 'POST', `${SECRET}?secretId=w1`, local, create)).status).toBe(200);
  });

  it('is refused by the Compute emulator', async () => {
    const path = '/compute/v1/projects/demo-web/zones/us-central1-a/instances';
    const page = { host: e.compute.endpoint, origin: 'http://attacker.example' };
    expect((await send(e.compute.endpoint, 'GET', path, page)).status).toBe(403);
    expect((await send(e.compute.endpoint, 'GET', path, { host: `evil.example:1` })).status).toBe(403);
    expect((await send(e.compute.endpoint, 'GET', path, { host: e.compute.endpoint })).status).toBe(200);
  });

  it('is refused by the Scheduler front end', async () => {
    const app = createSchedulerApp(new LocalScheduler([], { publish: async () => 'id' } as never), {
      projectId: 'p',
      location: 'l',
    });
    const path = 'http://127.0.0.1:18196/v1/projects/p/locations/l/jobs';
    expect((await app.request(path, { headers: { origin: 'https://attacker.example' } })).status).toBe(403);
    expect((await app.request(path, { headers: { host: 'rebind.attacker.example' } })).status).toBe(403);
    expect((await app.request(path)).status).toBe(200);
  });
});
