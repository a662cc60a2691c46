// Bad input never crashes the Compute emulator: each malformed request gets GCE's error shape with a
// 4xx status, and the emulator keeps serving afterwards.
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import {
  computeClients,
  gceErrorOf,
  instanceBody,
  operationOf,
  waitForOperation,
} from '../../emulators/compute/testing.js';
import { readAll } from '../../emulators/forward-proxy/testing.js';

const project = 'demo-compute-bad';
const zone = 'us-central1-a';
let emu: ComputeEmulator;
let clients: ReturnType<typeof computeClients>;

beforeAll(async () => {
  emu = await startComputeEmulator({
    bootDelayMs: 50,
    deleteDelayMs: 50,
    addressRange: { first: '127.3.0.2', last: '127.3.255.254' },
  });
  clients = computeClients(emu.endpoint);
});

afterAll(async () => {
  await clients?.close();
  await emu?.stop();
});

afterEach(async () => {
  // whatever came before, the emulator still creates and serves instances
  const name = `alive-${Math.random().toString(36).slice(2, 8)}`;
  const [op] = await clients.instances.insert({
    project,
    zone,
    instanceResource: instanceBody(name, { zone }),
  });
  expect((await waitForOperation(clients.zoneOps, project, zone, operationOf(op).name!)).status).toBe('DONE');
});

interface GceErrorBody {
  error: {
    code: number;
    message: string;
    errors: Array<{ message: string; domain: string; reason: string }>;
  };
}

async function call(
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; json: GceErrorBody }> {
  const res = await fetch(`${emu.url}${path}`, {
    method,
    body,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
  });
  return { status: res.status, json: (await res.json()) as GceErrorBody };
}

const instancesPath = (z = zone) => `/compute/v1/projects/${project}/zones/${z}/instances`;

function expectGceShape(json: GceErrorBody, status: number, reason: string) {
  expect(json.error.code).toBe(status);
  expect(json.error.errors[0]).toMatchObject({ domain: 'global', reason });
  expect(json.error.errors[0]!.message).toBe(json.error.message);
}

describe('bad request bodies', () => {
  it.each([
    ['malformed JSON', '{"name": "x",', 'badRequest', /^Invalid JSON payload received\./],
    ['a JSON array', '[1,2]', 'invalid', /^Invalid value for field 'resource'/],
    ['a JSON string', '"x"', 'invalid', /^Invalid value for field 'resource'/],
    [
      'no name',
      JSON.stringify({ ...instanceBody('x', { zone }), name: undefined }),
      'required',
      /^Required field 'resource\.name' not specified$/,
    ],
    [
      'an invalid name',
      JSON.stringify(instanceBody('Bad_Name', { zone })),
      'invalid',
      /^Invalid value for field 'resource\.name': 'Bad_Name'\. Must be a match of regex/,
    ],
    [
      'a 64-character name',
      JSON.stringify(instanceBody(`a${'b'.repeat(63)}`, { zone })),
      'invalid',
      /resource\.name/,
    ],
    [
      'an unknown machine type',
      JSON.stringify(instanceBody('x', { zone, machineType: 'e9-gigantic-1' })),
      'invalid',
      /Machine type with name 'e9-gigantic-1' does not exist in zone 'us-central1-a'/,
    ],
    [
      'a size its family does not come in',
      JSON.stringify(instanceBody('x', { zone, machineType: 'e2-standard-3' })),
      'invalid',
      /Machine type with name 'e2-standard-3' does not exist in zone 'us-central1-a'/,
    ],
    [
      'a machine type from another zone',
      JSON.stringify({
        ...instanceBody('x', { zone }),
        machineType: 'zones/us-east1-b/machineTypes/e2-small',
      }),
      'invalid',
      /Cross-zone/,
    ],
    [
      'no disks',
      JSON.stringify({ ...instanceBody('x', { zone }), disks: [] }),
      'required',
      /resource\.disks/,
    ],
    [
      'a boot disk without an image',
      JSON.stringify({ ...instanceBody('x', { zone }), disks: [{ boot: true }] }),
      'required',
      /sourceImage/,
    ],
    [
      'no network interface',
      JSON.stringify({ ...instanceBody('x', { zone }), networkInterfaces: undefined }),
      'required',
      /networkInterfaces/,
    ],
    [
      'a bad label',
      JSON.stringify(instanceBody('x', { zone, labels: { Owner: 'x' } })),
      'invalid',
      /Label key 'Owner'/,
    ],
    [
      'a bad tag',
      JSON.stringify(instanceBody('x', { zone, tags: ['Not_A_Tag'] })),
      'invalid',
      /tags\.items\[0\]/,
    ],
    [
      'duplicate metadata keys',
      JSON.stringify(instanceBody('x', { zone, extraMetadata: { a: '1' }, proxyPort: 1 })).replace(
        '"proxyplane-proxy-port"',
        '"a"',
      ),
      'invalid',
      /Duplicate metadata key 'a'/,
    ],
  ])('%s → 400', async (_what, body, reason, message) => {
    const { status, json } = await call('POST', instancesPath(), body);
    expect(status).toBe(400);
    expectGceShape(json, 400, reason);
    expect(json.error.message).toMatch(message);
  });

  it('reports every problem of one body in errors[]', async () => {
    const { json } = await call('POST', instancesPath(), JSON.stringify({ name: 'Bad Name' }));
    expect(json.error.errors.map((e) => e.reason)).toEqual(['invalid', 'required', 'required', 'required']);
  });

  it('answers an oversized body with 400 and closes the connection', async () => {
    const huge = JSON.stringify({ ...instanceBody('big', { zone }), description: 'x'.repeat(600 * 1024) });
    const res = await fetch(`${emu.url}${instancesPath()}`, {
      method: 'POST',
      body: huge,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('connection')).toBe('close');
    const json = (await res.json()) as GceErrorBody;
    expectGceShape(json, 400, 'badRequest');
    expect(json.error.message).toBe('Request payload size exceeds the limit: 524288 bytes.');
  });
});

describe('bad paths, methods and parameters', () => {
  it('unknown zone → 400 "Unknown zone", through the real client too', async () => {
    const { status, json } = await call('GET', instancesPath('mars-central1-a'));
    expect(status).toBe(400);
    expectGceShape(json, 400, 'invalid');
    expect(json.error.message).toBe("Invalid value for field 'zone': 'mars-central1-a'. Unknown zone.");
    const err = await clients.instances
      .insert({ project, zone: 'us-central1', instanceResource: instanceBody('x', { zone: 'us-central1' }) })
      .catch((e: unknown) => e);
    expect(gceErrorOf(err)).toMatchObject({ httpStatus: 400, reason: 'invalid' });
  });

  it('an invalid instance name in the path → 400 invalid', async () => {
    const { status, json } = await call('GET', `${instancesPath()}/NOT_VALID`);
    expect(status).toBe(400);
    expect(json.error.message).toMatch(/^Invalid value for field 'instance': 'NOT_VALID'/);
  });

  it('a wrong method on a known path → 405 in the GCE shape, an unknown path → 404', async () => {
    const wrong = await call('PUT', `${instancesPath()}/x`, '{}');
    expect(wrong.status).toBe(405);
    expectGceShape(wrong.json, 405, 'httpMethodNotAllowed');
    const unknown = await call('GET', '/compute/v1/projects/p/zones/us-central1-a/disks');
    expect(unknown.status).toBe(404);
    expectGceShape(unknown.json, 404, 'notFound');
  });

  it.each([
    ['filter=labels.a%20%3D', /'filter'/],
    ['filter=nosuchfield%20%3D%201', /'filter'/],
    ['maxResults=501', /'maxResults'/],
    ['maxResults=-3', /'maxResults'/],
    ['pageToken=bm90LWEtdG9rZW4', /'pageToken'/],
    ['orderBy=status', /'orderBy'/],
  ])('list with %s → 400 invalid', async (query, field) => {
    const { status, json } = await call('GET', `${instancesPath()}?${query}`);
    expect(status).toBe(400);
    expectGceShape(json, 400, 'invalid');
    expect(json.error.message).toMatch(field);
  });

  it('a requestId that is not a UUID → 400 invalid', async () => {
    const { status, json } = await call(
      'POST',
      `${instancesPath()}?requestId=abc`,
      JSON.stringify(instanceBody('x', { zone })),
    );
    expect(status).toBe(400);
    expect(json.error.message).toMatch(/'requestId'/);
  });

  it('percent-encoding that does not decode → 404, not a crash', async () => {
    const { status } = await call('GET', `/compute/v1/projects/%E0%A4%A/zones/${zone}/instances`);
    expect(status).toBe(404);
  });

  it('garbage on the socket → 400 and the connection is closed', async () => {
    const socket = connect(emu.port, emu.host);
    socket.write('\u0000\u0001NOT HTTP AT ALL\r\n\r\n');
    expect(await readAll(socket)).toMatch(/^HTTP\/1.1 400/);
  });

  it('a client that disconnects mid-body and one that abandons an operation wait do no harm', async () => {
    const socket = connect(emu.port, emu.host);
    socket.write(
      `POST ${instancesPath()} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n{"name":`,
    );
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();

    emu.admin.setBootDelay(5000, 1);
    const [op] = await clients.instances.insert({
      project,
      zone,
      instanceResource: instanceBody('slowpoke', { zone }),
    });
    const controller = new AbortController();
    const waiting = fetch(
      `${emu.url}/compute/v1/projects/${project}/zones/${zone}/operations/${operationOf(op).name}/wait`,
      {
        method: 'POST',
        signal: controller.signal,
      },
    ).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    controller.abort();
    expect(await waiting).toBeInstanceOf(Error);
  });
});

describe('list filters, through the real client', () => {
  /** The GCE error a call fails with (and it must fail). */
  async function refusal(call: Promise<unknown>) {
    const err = await call.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).not.toBeNull();
    return gceErrorOf(err);
  }

  it.each([
    // deep enough to overflow a recursive parser's stack, which answered 500 backendError (transient)
    ['parentheses nested 5000 deep', `${'('.repeat(5000)}status = RUNNING${')'.repeat(5000)}`],
    ['a lookahead, which RE2 does not have', "name eq '(?=alive)alive-.*'"],
  ])('%s → 400 invalid from list, aggregatedList and zoneOperations.list', async (_what, filter) => {
    const aggregated = async () => {
      for await (const _ of clients.instances.aggregatedListAsync({ project, filter })) {
        // draining the pages is the call
      }
    };
    for (const call of [
      clients.instances.list({ project, zone, filter }, { autoPaginate: false }),
      aggregated(),
      clients.zoneOps.list({ project, zone, filter }, { autoPaginate: false }),
    ]) {
      expect(await refusal(call)).toMatchObject({ httpStatus: 400, reason: 'invalid' });
    }
  });

  it("matches regular expressions as GCE's RE2 does: in linear time, with (?i) flags", async () => {
    const name = 'a'.repeat(28);
    await clients.instances.insert({ project, zone, instanceResource: instanceBody(name, { zone }) });
    const list = async (filter: string) => {
      const [items] = await clients.instances.list({ project, zone, filter }, { autoPaginate: false });
      return items.map((i) => i.name);
    };
    // exponential for a backtracking engine (seconds at 28 characters, ages at 63; the emulator shares its
    // event loop with the whole local plane): that RE2 compiles them is checked in filter.unit.test.ts
    expect(await list("name eq '(a|a)*b'")).toEqual([]);
    expect(await list("name eq '(a|a)*'")).toEqual([name]);
    expect(await list("name eq '(?i)A+'")).toEqual([name]);
  });
});
