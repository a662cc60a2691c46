// The gce provider driven through the real @google-cloud/compute client against a scripted local HTTP
// server: what the client sends, and how each GCE answer (409, 404, 403 quota, 403 rate limit, 403
// forbidden, 503 stockout, Operation errors, 5xx, partial aggregatedList, a 409 with no instance, a read
// refused) becomes the seed's outcome.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';
import type { GceProvider } from '../../shared/src/adapters/gce/gce-provider.js';
import { jsonLogger } from '../../shared/src/adapters/log/json-logger.js';
import type { InstanceRequest } from '../../shared/src/domain/reconcile/types.js';
import { ProviderError } from '../../shared/src/ports/provider.js';
import { instanceRequest } from '../support/instance-request.js';

interface Reply {
  status: number;
  body: unknown;
}
type Route = (req: http.IncomingMessage, body: string) => Reply | undefined;

const seen: Array<{ method: string; path: string; body: string }> = [];
let routes: Route[] = [];

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => {
    body += c;
  });
  req.on('end', () => {
    seen.push({ method: req.method ?? '', path: req.url ?? '', body });
    const reply = routes.reduce<Reply | undefined>((r, route) => r ?? route(req, body), undefined) ?? {
      status: 500,
      body: { error: { code: 500, message: 'unscripted', errors: [{ reason: 'backendError' }] } },
    };
    res.writeHead(reply.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(reply.body));
  });
});

const gceError = (code: number, reason: string) => ({
  status: code,
  body: { error: { code, message: reason, errors: [{ reason }] } },
});
const op = (over: Record<string, unknown> = {}) => ({
  kind: 'compute#operation',
  name: 'op-1',
  status: 'RUNNING',
  ...over,
});
const instance = (status: string, natIP?: string) => ({
  status: 200,
  body: {
    name: 'pp-00000000000040008000',
    zone: 'https://www.googleapis.com/compute/v1/projects/demo/zones/us-central1-a',
    status,
    creationTimestamp: '2026-01-01T00:00:00.000-07:00',
    labels: { 'proxyplane-spec-hash': 'abc' },
    networkInterfaces: [{ accessConfigs: [{ name: 'External NAT', ...(natIP ? { natIP } : {}) }] }],
  },
});
const when =
  (method: string, pathPart: string, replies: Reply[]): Route =>
  (req) =>
    req.method === method && req.url?.includes(pathPart)
      ? replies.length > 1
        ? replies.shift()
        : replies[0]
      : undefined;

const request: InstanceRequest = instanceRequest({
  name: 'pp-00000000000040008000',
  proxyName: 'p1',
  uid: '00000000-0000-4000-8000-000000000001',
});
const providerId = 'zones/us-central1-a/instances/pp-00000000000040008000';

let provider: GceProvider;
let close: () => Promise<void>;

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  ({ provider, close } = makeGceProvider({
    project: 'demo',
    computeEndpoint: `127.0.0.1:${port}`,
    retry: { attempts: 3, baseMs: 1, maxMs: 5 },
  }));
});
afterAll(async () => {
  await close();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  seen.length = 0;
  routes = [];
});

describe('GceProvider.create', () => {
  it('inserts the built request and returns the zone-qualified providerId without waiting', async () => {
    routes = [when('POST', '/zones/us-central1-a/instances', [{ status: 200, body: op() }])];
    await expect(provider.create(request)).resolves.toEqual({ providerId });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.path).toMatch(/^\/compute\/v1\/projects\/demo\/zones\/us-central1-a\/instances/);
    expect(JSON.parse(seen[0]!.body)).toMatchObject({
      name: request.name,
      labels: { 'managed-by': 'proxyplane', 'proxyplane-uid': request.uid },
    });
  });

  it('treats 409 alreadyExists as success when the instance exists (a duplicate delivery)', async () => {
    routes = [
      when('POST', '/instances', [gceError(409, 'alreadyExists')]),
      when('GET', '/instances/pp-', [instance('PROVISIONING')]),
    ];
    await expect(provider.create(request)).resolves.toEqual({ providerId });
  });

  it('a 409 with no such instance is no create: another resource holds the name (a leftover boot disk)', async () => {
    // GCE names the boot disk after the instance: a disk left over refuses the insert with the same 409.
    routes = [
      when('POST', '/instances', [gceError(409, 'alreadyExists')]),
      when('GET', '/instances/pp-', [gceError(404, 'notFound')]),
    ];
    const err = await provider.create(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ kind: 'transient', status: 409 });
    expect((err as Error).message).toContain('a boot disk pp-00000000000040008000 left over?');
  });

  it('a synchronous 403 quotaExceeded is a quota failure', async () => {
    routes = [when('POST', '/instances', [gceError(403, 'quotaExceeded')])];
    await expect(provider.create(request)).rejects.toMatchObject({ kind: 'quota', status: 403 });
  });

  it('an Operation that already failed with QUOTA_EXCEEDED is a quota failure', async () => {
    const failed = op({
      status: 'DONE',
      httpErrorStatusCode: 403,
      error: { errors: [{ code: 'QUOTA_EXCEEDED', message: "Quota 'CPUS' exceeded" }] },
    });
    routes = [when('POST', '/instances', [{ status: 200, body: failed }])];
    await expect(provider.create(request)).rejects.toMatchObject({ kind: 'quota', reason: 'QUOTA_EXCEEDED' });
  });

  // https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-bulk-vm-creation: a rate limit
  // is 403 rateLimitExceeded, a stockout refused at once 503 insufficientCapacity.
  it('a 403 rateLimitExceeded is retried in the call and the insert then lands', async () => {
    routes = [
      when('POST', '/instances', [
        {
          status: 403,
          body: {
            error: {
              code: 403,
              message: 'Rate Limit Exceeded',
              errors: [{ domain: 'usageLimits', reason: 'rateLimitExceeded' }],
            },
          },
        },
        { status: 200, body: op() },
      ]),
    ];
    await expect(provider.create(request)).resolves.toEqual({ providerId });
    expect(seen).toHaveLength(2);
  });

  it('a 503 insufficientCapacity (a stockout) is a quota failure, not retried in the call', async () => {
    routes = [when('POST', '/instances', [gceError(503, 'insufficientCapacity')])];
    await expect(provider.create(request)).rejects.toMatchObject({
      kind: 'quota',
      status: 503,
      reason: 'insufficientCapacity',
    });
    expect(seen).toHaveLength(1);
  });

  // Not the spec's fault: reconcile's account not (yet) allowed to create, or to act as the VMs' service
  // account — on a first deploy, until its grant has propagated. Latched, every proxy created in that
  // window stayed Failed until someone edited a spec that was never the problem.
  it.each([
    ['403 forbidden', gceError(403, 'forbidden')],
    ['403 accessNotConfigured (the API disabled)', gceError(403, 'accessNotConfigured')],
  ])('a create refused %s is transient, not retried in the call', async (_, refusal) => {
    routes = [when('POST', '/instances', [refusal])];
    await expect(provider.create(request)).rejects.toMatchObject({ kind: 'transient', status: 403 });
    expect(seen).toHaveLength(1);
  });

  it('an Operation that already failed with SERVICE_ACCOUNT_ACCESS_DENIED (HTTP 400) is transient', async () => {
    const failed = op({
      status: 'DONE',
      httpErrorStatusCode: 400,
      error: { errors: [{ code: 'SERVICE_ACCOUNT_ACCESS_DENIED', message: 'no actAs' }] },
    });
    routes = [when('POST', '/instances', [{ status: 200, body: failed }])];
    await expect(provider.create(request)).rejects.toMatchObject({
      kind: 'transient',
      reason: 'SERVICE_ACCOUNT_ACCESS_DENIED',
    });
  });

  it('a 400 is permanent and not retried', async () => {
    routes = [when('POST', '/instances', [gceError(400, 'invalid')])];
    await expect(provider.create(request)).rejects.toMatchObject({ kind: 'permanent' });
    expect(seen).toHaveLength(1);
  });
});

describe('GceProvider.get', () => {
  it('maps RUNNING with a natIP to Running and its address', async () => {
    routes = [when('GET', `/instances/${request.name}`, [instance('RUNNING', '127.0.0.9')])];
    await expect(provider.get(providerId)).resolves.toEqual({
      providerId,
      state: 'Running',
      ip: '127.0.0.9',
      specHash: 'abc',
      // This scripted instance carries no metadata: it does not say what it serves.
      serves: { port: null, credentialsSecret: null },
      // GCE's creationTimestamp, with its offset (how long a booting instance has been one: managed.ts).
      createdAt: new Date('2026-01-01T07:00:00Z'),
    });
  });

  it('maps RUNNING without a natIP to Provisioning', async () => {
    routes = [when('GET', `/instances/${request.name}`, [instance('RUNNING')])];
    await expect(provider.get(providerId)).resolves.toMatchObject({ state: 'Provisioning', ip: null });
  });

  it('a read refused 403 is transient: never a PermanentError latched on a proxy whose VM serves', async () => {
    // IAM still propagating, the API disabled, a VPC Service Controls denial: nothing in the spec to fix.
    routes = [when('GET', '/instances/pp-', [gceError(403, 'forbidden')])];
    await expect(provider.get(providerId)).rejects.toMatchObject({
      kind: 'transient',
      status: 403,
      reason: 'forbidden',
    });
  });

  it('returns null on 404', async () => {
    routes = [when('GET', '/instances/', [gceError(404, 'notFound')])];
    await expect(provider.get(providerId)).resolves.toBeNull();
  });

  it('retries 5xx itself (the client does not) and succeeds', async () => {
    routes = [
      when('GET', '/instances/', [
        gceError(503, 'backendError'),
        gceError(500, 'backendError'),
        instance('STOPPED'),
      ]),
    ];
    await expect(provider.get(providerId)).resolves.toMatchObject({ state: 'Stopped' });
    expect(seen).toHaveLength(3);
  });

  it('gives up after its bound with a transient failure', async () => {
    routes = [when('GET', '/instances/', [gceError(503, 'backendError')])];
    const err = await provider.get(providerId).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ kind: 'transient', status: 503 });
    expect(seen).toHaveLength(3);
  });

  it('refuses a providerId that is not a gce one, without calling GCE', async () => {
    await expect(provider.get('pods/x')).rejects.toMatchObject({ kind: 'permanent' });
    expect(seen).toHaveLength(0);
  });
});

describe('GceProvider.delete and lastCreateFailure', () => {
  it('treats 404 as success', async () => {
    routes = [when('DELETE', '/instances/', [gceError(404, 'notFound')])];
    await expect(provider.delete(providerId)).resolves.toBe('deleting');
    expect(seen[0]?.method).toBe('DELETE');
  });

  // GCE words both refusals alike (400 resourceNotReady): a delete already under way, and an instance
  // still being created. The instance's status tells them apart; only the first is done.
  it.each([
    ['STOPPING (a delete under way)', instance('STOPPING'), 'deleting'],
    ['gone meanwhile', gceError(404, 'notFound'), 'deleting'],
    ['PROVISIONING (still being created)', instance('PROVISIONING'), 'not-ready'],
    ['STAGING (still being created)', instance('STAGING'), 'not-ready'],
    ['RUNNING (its insert finishing)', instance('RUNNING'), 'not-ready'],
  ])('resourceNotReady on an instance %s → %s', async (_, got, outcome) => {
    routes = [
      when('DELETE', '/instances/', [gceError(400, 'resourceNotReady')]),
      when('GET', '/instances/', [got]),
    ];
    await expect(provider.delete(providerId)).resolves.toBe(outcome);
    expect(seen.map((r) => r.method)).toEqual(['DELETE', 'GET']);
  });

  // Nothing in a delete comes from the spec. Classed permanent, a refused delete latched the proxy: a
  // deleted proxy's VM ran on with nothing due (phase Deleting), a replaced one's proxy went Failed.
  it.each([
    ['403 forbidden (IAM propagating, VPC-SC)', gceError(403, 'forbidden')],
    ['400 (deletion protection on)', gceError(400, 'invalid')],
  ])('a delete refused %s is transient, retried with backoff', async (_, refusal) => {
    routes = [when('DELETE', '/instances/', [refusal])];
    await expect(provider.delete(providerId)).rejects.toMatchObject({ kind: 'transient' });
  });

  it('a delete whose resourceNotReady look-up is refused 403 is transient too', async () => {
    routes = [
      when('DELETE', '/instances/', [gceError(400, 'resourceNotReady')]),
      when('GET', '/instances/', [gceError(403, 'forbidden')]),
    ];
    await expect(provider.delete(providerId)).rejects.toMatchObject({ kind: 'transient', status: 403 });
  });

  it('surfaces the newest failed insert Operation of a missing instance', async () => {
    const target = `https://www.googleapis.com/compute/v1/projects/demo/zones/us-central1-a/instances/${request.name}`;
    routes = [
      when('GET', '/operations', [
        {
          status: 200,
          body: {
            items: [
              op({
                name: 'old',
                status: 'DONE',
                operationType: 'insert',
                targetLink: target,
                insertTime: '2026-01-01T00:00:00Z',
              }),
              op({
                name: 'new',
                status: 'DONE',
                operationType: 'insert',
                targetLink: target,
                insertTime: '2026-01-01T00:01:00Z',
                httpErrorStatusCode: 403,
                error: { errors: [{ code: 'QUOTA_EXCEEDED', message: 'CPUS' }] },
              }),
            ],
          },
        },
      ]),
    ];
    await expect(provider.lastCreateFailure(providerId)).resolves.toMatchObject({ kind: 'quota' });
    expect(decodeURIComponent(seen[0]!.path)).toContain(`targetLink = "${target}"`);
  });

  it('reports no create failure when the operations list is unavailable — and says so in a WARNING', async () => {
    routes = [when('GET', '/operations', [gceError(404, 'notFound')])];
    const lines: string[] = [];
    const { port } = server.address() as AddressInfo;
    const logged = makeGceProvider({
      project: 'demo',
      computeEndpoint: `127.0.0.1:${port}`,
      retry: { attempts: 1, baseMs: 1, maxMs: 1 },
      log: jsonLogger({}, { write: (line) => lines.push(line) }),
    });
    try {
      await expect(logged.provider.lastCreateFailure(providerId)).resolves.toBeNull();
    } finally {
      await logged.close();
    }
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        zone: 'us-central1-a',
        status: 404,
        reason: 'notFound',
      }),
    ]);
  });
});

describe('GceProvider.listByTag', () => {
  it('pages through aggregatedList by label with partial success, keeping unreachable zones', async () => {
    const owned = (name: string, uid?: string) => ({
      name,
      status: 'RUNNING',
      creationTimestamp: '2026-01-01T00:00:00.000-07:00',
      labels: uid ? { 'managed-by': 'proxyplane', 'proxyplane-uid': uid, 'proxyplane-name': name } : {},
    });
    routes = [
      (req) =>
        req.url?.includes('/aggregated/instances') && !req.url.includes('pageToken')
          ? {
              status: 200,
              body: {
                items: {
                  'zones/us-central1-a': { instances: [owned('a', 'uid-a'), owned('stray')] },
                  'zones/us-east1-b': { warning: { code: 'NO_RESULTS_ON_PAGE' } },
                },
                nextPageToken: 'p2',
              },
            }
          : undefined,
      when('GET', 'pageToken=p2', [
        {
          status: 200,
          body: {
            items: { 'zones/europe-west1-b': { instances: [owned('b', 'uid-b')] } },
            unreachables: ['zones/asia-east1-a'],
          },
        },
      ]),
    ];
    const list = await provider.listByTag();
    expect(list.instances.map((i) => [i.uid, i.providerId])).toEqual([
      ['uid-a', 'zones/us-central1-a/instances/a'],
      ['uid-b', 'zones/europe-west1-b/instances/b'],
    ]);
    expect(list.instances[0]?.createdAt).toEqual(new Date('2026-01-01T07:00:00Z'));
    expect(list.unreachable).toEqual(['asia-east1-a']);
    const first = decodeURIComponent(seen[0]!.path);
    expect(first).toContain('labels.managed-by = "proxyplane"');
    expect(first).toContain('returnPartialSuccess=true');
  });

  it('asks before each page after the first whether to stop, and a stopped listing fails transient', async () => {
    routes = [
      (req) =>
        req.url?.includes('/aggregated/instances')
          ? { status: 200, body: { items: {}, nextPageToken: `p${seen.length}` } }
          : undefined,
    ];
    let asked = 0;
    const err = await provider.listByTag({ stop: () => ++asked >= 3 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({
      kind: 'transient',
      message: expect.stringContaining('stopped after 3 pages'),
    });
    expect(asked).toBe(3);
    expect(seen.filter((r) => r.path.includes('/aggregated/instances'))).toHaveLength(3);
  });
});
