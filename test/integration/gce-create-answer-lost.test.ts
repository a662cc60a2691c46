// An instances.insert that lands but whose answer is lost — given up unanswered, or answered 5xx by a
// front end after the insert went through — may have created the VM. The GCE provider looks before it
// fails the create: found, the create succeeds and the reconcile pass records the VM. Failing it, a
// manual attempt past a proxy's permanent-failure latch recorded nothing, and the VM ran, and billed,
// unrecorded under a Failed proxy. The real @google-cloud/compute client, through a front that forwards
// every call to the Compute emulator and spoils the insert's answer.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ComputeAdminClient } from '../../emulators/compute/admin-client.js';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';
import { ProviderError } from '../../shared/src/ports/provider.js';
import { instanceRequest } from '../support/instance-request.js';

const project = 'demo-gce-answer-lost';
const zone = 'us-central1-a';
let emu: ComputeEmulator;
let admin: ComputeAdminClient;

/** How the front answers an insert once the emulator has taken it. */
let spoil: 'none' | '503' | 'silence' | 'refuse' = 'none';
const held: http.ServerResponse[] = [];
let front: http.Server;
let frontEndpoint = '';

beforeAll(async () => {
  emu = await startComputeEmulator({ projectId: project, bootDelayMs: 50, deleteDelayMs: 50 });
  admin = new ComputeAdminClient(emu.url);
  const upstream = new URL(`http://${emu.endpoint}`);
  front = http.createServer((req, res) => {
    const insert = req.method === 'POST' && /\/zones\/[^/]+\/instances$/.test(req.url?.split('?')[0] ?? '');
    if (insert && spoil === 'refuse') {
      // An answer that nothing was done (not forwarded): the create fails, and no look is made.
      req.resume();
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 403, message: 'denied', errors: [{ reason: 'forbidden' }] } }));
      return;
    }
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        if (!insert || spoil === 'none') {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        answer.resume(); // the insert went through; its answer is lost on the way back
        if (spoil === 'silence') {
          held.push(res);
          return;
        }
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { code: 503, message: 'backend error', errors: [{ reason: 'backendError' }] },
          }),
        );
      },
    );
    req.pipe(out);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  frontEndpoint = `127.0.0.1:${(front.address() as AddressInfo).port}`;
});

afterEach(async () => {
  spoil = 'none';
  for (const res of held.splice(0)) res.destroy();
  await admin.reset();
});

afterAll(async () => {
  front?.closeAllConnections();
  await new Promise<void>((resolve) => front?.close(() => resolve()));
  await emu?.stop();
});

const request = (name: string, n: number) =>
  instanceRequest({ name, proxyName: name, uid: `00000000-0000-4000-8000-00000000000${n}`, zone });

describe('GceProvider.create when the insert lands but its answer is lost', () => {
  it.each<['503' | 'silence', number]>([
    ['503', 1],
    ['silence', 2],
  ])('answered %s after landing: the look finds the instance, and the create succeeds', async (how, n) => {
    const gce = makeGceProvider({
      project,
      computeEndpoint: frontEndpoint,
      retry: { attempts: 1, baseMs: 1, maxMs: 1, attemptTimeoutMs: 3_000 },
    });
    try {
      // The client's first call loads what it loads lazily: not inside the insert's deadline.
      expect(await gce.provider.get(`zones/${zone}/instances/pp-warm`)).toBeNull();
      spoil = how;
      const name = `pp-lost-${how}`;
      const created = await gce.provider.create(request(name, n));
      expect(created).toEqual({ providerId: `zones/${zone}/instances/${name}` });
      expect((await admin.instances({ project })).map((i) => i.name)).toEqual([name]);
    } finally {
      await gce.close();
    }
  });

  it('an insert refused outright (a 4xx) fails as before, with no look', async () => {
    const gce = makeGceProvider({
      project,
      computeEndpoint: frontEndpoint,
      retry: { attempts: 1, baseMs: 1, maxMs: 1 },
    });
    try {
      spoil = 'refuse';
      await admin.resetCounters();
      const err = await gce.provider.create(request('pp-refused', 3)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ status: 403 });
      expect((await admin.counters()).total).toBe(0); // nothing forwarded: no insert, no look
    } finally {
      await gce.close();
    }
  });
});
