// An instances.insert that lands but whose answer is lost — given up unanswered, or answered 5xx by a
// front end after the insert went through, on any attempt — may have created the VM. The GCE provider
// looks (one get) before it fails the create: found, the create succeeds and the reconcile pass records
// the VM. Failing it, a manual attempt past a proxy's permanent-failure latch recorded nothing, and once
// its redeliveries ran out the VM ran, and billed, unrecorded under a Failed proxy. The real
// @google-cloud/compute client, through a front that forwards every call to the Compute emulator and
// spoils the inserts' answers as each test asks.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ComputeAdminClient } from '../../emulators/compute/admin-client.js';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';
import type { RetryOptions } from '../../shared/src/adapters/gce/retry.js';
import { ProviderError } from '../../shared/src/ports/provider.js';
import { instanceRequest } from '../support/instance-request.js';

const project = 'demo-gce-answer-lost';
const zone = 'us-central1-a';
let emu: ComputeEmulator;
let admin: ComputeAdminClient;

/**
 * How the front answers each next insert: forwarded to the emulator and its answer replaced by a 503 or
 * by silence; or not forwarded at all, answered 403 forbidden (nothing done), 403 rateLimitExceeded (the
 * client retries it) or 503 (nothing landed). An insert with no spoil left goes through as it is.
 */
type Spoil = 'landed-503' | 'landed-silence' | 'forbidden' | 'rate-limited' | 'unsent-503';
let spoils: Spoil[] = [];
const held: http.ServerResponse[] = [];
let front: http.Server;
let frontEndpoint = '';

const unsent: Record<string, [number, string]> = {
  forbidden: [403, 'forbidden'],
  'rate-limited': [403, 'rateLimitExceeded'],
  'unsent-503': [503, 'backendError'],
};

function answerError(res: http.ServerResponse, code: number, reason: string): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { code, message: reason, errors: [{ reason, message: reason }] } }));
}

beforeAll(async () => {
  emu = await startComputeEmulator({ projectId: project, bootDelayMs: 50, deleteDelayMs: 50 });
  admin = new ComputeAdminClient(emu.url);
  const upstream = new URL(`http://${emu.endpoint}`);
  front = http.createServer((req, res) => {
    const insert = req.method === 'POST' && /\/zones\/[^/]+\/instances$/.test(req.url?.split('?')[0] ?? '');
    const spoil = insert ? spoils.shift() : undefined;
    const refusal = spoil && unsent[spoil];
    if (refusal) {
      req.resume();
      answerError(res, ...refusal);
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
        if (spoil === undefined) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        answer.resume(); // the insert went through; its answer is lost on the way back
        if (spoil === 'landed-silence') held.push(res);
        else answerError(res, 503, 'backendError');
      },
    );
    req.pipe(out);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  frontEndpoint = `127.0.0.1:${(front.address() as AddressInfo).port}`;
});

afterEach(async () => {
  spoils = [];
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

/** A provider through the front, its client warmed up (what it loads lazily is not in any deadline). */
async function provider(retry: Partial<RetryOptions>) {
  const gce = makeGceProvider({
    project,
    computeEndpoint: frontEndpoint,
    retry: { attempts: 1, baseMs: 1, maxMs: 1, attemptTimeoutMs: 3_000, ...retry },
  });
  expect(await gce.provider.get(`zones/${zone}/instances/pp-warm`)).toBeNull();
  return gce;
}

describe('GceProvider.create when an insert may have landed', () => {
  it.each<[Spoil, number]>([
    ['landed-503', 1],
    ['landed-silence', 2],
  ])('%s: the look finds the instance, and the create succeeds', async (spoil, n) => {
    const gce = await provider({});
    try {
      spoils = [spoil];
      const name = `pp-${spoil}`;
      expect(await gce.provider.create(request(name, n))).toEqual({
        providerId: `zones/${zone}/instances/${name}`,
      });
      expect((await admin.instances({ project })).map((i) => i.name)).toEqual([name]);
    } finally {
      await gce.close();
    }
  });

  it('an earlier attempt landed unanswered, the retry was refused (rate limit): the look finds it', async () => {
    const gce = await provider({ attempts: 2 });
    try {
      spoils = ['landed-silence', 'rate-limited'];
      expect(await gce.provider.create(request('pp-lost-then-limited', 3))).toEqual({
        providerId: `zones/${zone}/instances/pp-lost-then-limited`,
      });
    } finally {
      await gce.close();
    }
  });

  it('a 503 for an insert that did not land: one look finds nothing, and the create fails', async () => {
    const gce = await provider({});
    try {
      spoils = ['unsent-503'];
      await admin.resetCounters();
      const err = await gce.provider.create(request('pp-not-landed', 4)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ status: 503 });
      expect(await admin.counters()).toMatchObject({ total: 1 }); // the look, answered 404
      expect(await admin.instances({ project })).toEqual([]);
    } finally {
      await gce.close();
    }
  });

  it('an insert refused outright (a 4xx, on its only attempt) fails with no look', async () => {
    const gce = await provider({});
    try {
      spoils = ['forbidden'];
      await admin.resetCounters();
      const err = await gce.provider.create(request('pp-refused', 5)).catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 403 });
      expect((await admin.counters()).total).toBe(0); // nothing forwarded: no insert, no look
    } finally {
      await gce.close();
    }
  });
});
