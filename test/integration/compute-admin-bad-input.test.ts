// The Compute emulator's admin endpoint answers a fault of the wrong type or shape with 400
// invalid_argument and arms nothing: a value stored unchecked only failed later, in the API call it armed
// (a quota metric that was not a string threw in the insert Operation's timer and ended the process).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ComputeAdminClient } from '../../emulators/compute/admin-client.js';
import type { Severity } from '../../emulators/compute/log.js';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import {
  computeClients,
  instanceBody,
  operationOf,
  waitForOperation,
} from '../../emulators/compute/testing.js';

const project = 'demo-compute-admin-bad';
const zone = 'us-central1-a';
let emu: ComputeEmulator;
let admin: ComputeAdminClient;
let clients: ReturnType<typeof computeClients>;
const errors: string[] = [];

beforeAll(async () => {
  emu = await startComputeEmulator({
    projectId: project,
    bootDelayMs: 50,
    deleteDelayMs: 50,
    addressRange: { first: '127.37.0.2', last: '127.37.255.254' },
    log: (severity: Severity, message, fields) => {
      if (severity === 'ERROR') errors.push(`${message} ${JSON.stringify(fields)}`);
    },
  });
  admin = new ComputeAdminClient(emu.url);
  clients = computeClients(emu.endpoint);
});

afterAll(async () => {
  await clients?.close();
  await emu?.stop();
  expect(errors).toEqual([]);
});

afterEach(async () => {
  await admin.reset();
});

const NOTHING_ARMED = { quota: null, errors: null, slowBoots: [], unreachableZones: [] };

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${emu.url}/admin${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('a fault of the wrong type or shape → 400 invalid_argument, nothing armed', () => {
  it.each<[string, string, unknown]>([
    ['quota metric a number', '/faults/quota', { count: 1, mode: 'async', metric: 5 }],
    ['quota metric null', '/faults/quota', { count: 1, mode: 'sync', metric: null }],
    ['quota metric not a metric name', '/faults/quota', { count: 1, metric: 'cpus per region' }],
    ['quota limit a string', '/faults/quota', { count: 1, limit: '24' }],
    ['quota limit negative', '/faults/quota', { count: 1, mode: 'async', limit: -1 }],
    ['quota count a string', '/faults/quota', { count: '1' }],
    ['quota mode a list', '/faults/quota', { count: 1, mode: ['async'] }],
    ['errors operations a string', '/faults/errors', { count: 1, operations: 'get' }],
    ['errors operations not names', '/faults/errors', { count: 1, operations: [5] }],
    ['errors rate a string', '/faults/errors', { rate: '0.5' }],
    ['errors seed a string', '/faults/errors', { rate: 0.5, seed: 'x' }],
    ['errors code a string', '/faults/errors', { count: 1, code: '503' }],
    ['boot delay a string', '/faults/boot-delay', { bootDelayMs: '100', nextInserts: 1 }],
    ['unreachable zones a string', '/faults/unreachable-zones', { zones: 'us-east1-b' }],
    ['unreachable zones not names', '/faults/unreachable-zones', { zones: [5] }],
  ])('%s', async (_what, path, body) => {
    const { status, json } = await post(path, body);
    expect({ status, error: json.error }).toEqual({ status: 400, error: 'invalid_argument' });
    expect(await admin.faults()).toMatchObject(NOTHING_ARMED);
  });

  it('a backdate to a creationTimestamp that is not a string', async () => {
    const [op] = await clients.instances.insert({
      project,
      zone,
      instanceResource: instanceBody('backdated', { zone }),
    });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(op).name!);
    const before = (await admin.instance(project, zone, 'backdated')).creationTimestamp;
    const { status, json } = await post(`/projects/${project}/zones/${zone}/instances/backdated/backdate`, {
      creationTimestamp: 5,
    });
    expect({ status, error: json.error }).toEqual({ status: 400, error: 'invalid_argument' });
    expect((await admin.instance(project, zone, 'backdated')).creationTimestamp).toBe(before);
  });

  it('the insert after a rejected fault is served normally', async () => {
    expect((await post('/faults/quota', { count: 1, mode: 'async', metric: 5 })).status).toBe(400);
    const [op] = await clients.instances.insert({
      project,
      zone,
      instanceResource: instanceBody('after-rejected', { zone }),
    });
    const done = await waitForOperation(clients.zoneOps, project, zone, operationOf(op).name!);
    expect(done.error).toBeFalsy();
  });
});

it('a valid async quota fault still fails the insert Operation with its metric and limit', async () => {
  const { status } = await post('/faults/quota', {
    count: 1,
    mode: 'async',
    metric: 'IN_USE_ADDRESSES',
    limit: 8,
  });
  expect(status).toBe(200);
  const [lro] = await clients.instances.insert({
    project,
    zone,
    instanceResource: instanceBody('quota-async', { zone }),
  });
  const done = await waitForOperation(clients.zoneOps, project, zone, operationOf(lro).name!);
  expect(done.httpErrorStatusCode).toBe(403);
  expect(done.error?.errors?.[0]).toMatchObject({
    code: 'QUOTA_EXCEEDED',
    message: "Quota 'IN_USE_ADDRESSES' exceeded.  Limit: 8.0 in region us-central1.",
  });
  expect(JSON.stringify(done.error?.errors?.[0]?.errorDetails)).toContain(
    'compute.googleapis.com/in_use_addresses',
  );
  expect(await admin.faults()).toMatchObject({ quota: null });
});
