// Brief invariant 7 and issue 6 "Secrets as references only": an end-to-end run of the local plane —
// create through the API → reconcile → probe → Ready → lease → fetch → report → release → rotate the
// credentials → lease again → delete → GC — with proxy credentials, a cloud-init script and the API's
// own tokens all distinctive. Beside it, the gateway side: the snapshot function, an external proxy in
// the gateway pool whose credentials are in Secret Manager (read by the probe and by the gateway), and a
// gateway worker in controller mode (its worker token, client users and fetch token distinctive) that
// registers, takes a snapshot, carries one request through that proxy and reports its outcome. And the
// error paths: calls with a wrong token, a secret whose payload is no username:password (read by the
// probe every second; a new version of it goes through rotation and reconcile), and 400s whose input
// holds a credential-like string. Afterwards every Firestore document (snapshots/* included), every log
// line of every process (the gateway's own output included), every Pub/Sub message (gateway-snapshots
// included), every API response, the gateway's /metrics and what the origin received are scanned: a
// secret value appears only in the lease responses' proxy URL.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import type { Message, Subscription } from '@google-cloud/pubsub';
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { type EchoTarget, requestViaProxy, startEchoTarget } from '../../emulators/forward-proxy/testing.js';
import { freePort } from '../../emulators/launcher/free-port.js';
import { type RunningService, startApi, startGatewayService } from '../../emulators/local-plane/services.js';
import {
  type SecretManagerEmulator,
  startSecretManagerEmulator,
} from '../../emulators/secret-manager/server.js';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { Tick } from '../../shared/src/messages/tick.js';
import { pubsubHost, testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { untilStable } from '../support/poll.js';
import { eventually, finishedRun, privateLoopbackRange } from './gc-support.js';
import { dumpFirestore, type Exhibit, encodings, findLeaks, logLines } from './secrets-never-leak-scan.js';

const USER = 'lk7user';
const PASS_V1 = 'LeakPw-v1-9f3Qz';
const PASS_V2 = 'LeakPw-v2-Xk28w';
const CLOUD_INIT = '#!/bin/sh\n# LEAKMARK-cloudinit-5521\necho boot\n';
const ADMIN_TOKEN = 'adminTok-LEAK-7Hq2mZ9pW4';
const CRAWLER_TOKEN = 'crawlerTok-LEAK-3v7Qp9xZ2';
// The gateway side: the external proxy's upstream credentials, the worker's token, its client user and
// its /v1/fetch bearer token.
const EXT_USER = 'extup-lk9';
const EXT_PASS = 'ExtPw-LEAK-4Nc8tL';
const WORKER = 'leak-gw';
const WORKER_TOKEN = 'workerTok-LEAK-8Rt5nB3xY';
const GW_USER = 'gwclient-lk4';
const GW_PASS = 'GwPw-LEAK-6Jd2sV';
const FETCH_TOKEN = 'fetchTok-LEAK-2Wm7cQ';
// The error paths: a payload that is no username:password (a space in the password), a token nobody
// holds, and a credential-like string in a refused request.
const BAD_USER = 'lkbaduser';
const BAD_PASS = 'MalformedPw LEAK-5Hx';
const WRONG_TOKEN = 'wrongTok-LEAK-1Pz6kD';
const WRONG_GW_PASS = 'WrongGwPw-LEAK-9Ts4';
const BAD_INPUT = 'lk400user:Pw400-LEAK-3Gy9';

interface Exchange {
  method: string;
  path: string;
  status: number;
  headers: string;
  body: string;
}

describe('secrets never leak (brief invariant 7)', () => {
  const projectId = testProjectId('demo-leak');
  const pubsub = createPubSub(projectId, `${pubsubHost().host}:${pubsubHost().port}`);
  let sm: SecretManagerEmulator;
  let secrets: SecretManagerServiceClient;
  let compute: ComputeEmulator;
  let plane: TestPlane;
  let api: RunningService;
  let db: Firestore;
  let target: EchoTarget;
  let upstream: ForwardProxy;
  let gateway: RunningService | undefined;
  let gatewayProxyPort: number;
  const gatewayExhibits: Exhibit[] = [];
  const exchanges: Exchange[] = [];
  const firestoreDumps: Exhibit[] = [];
  const messages: Exhibit[] = [];
  const observers: Subscription[] = [];

  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const lines: string[] = [];
    res.headers.forEach((v, k) => {
      lines.push(`${k}: ${v}`);
    });
    const headers = lines.join('\n');
    exchanges.push({ method, path, status: res.status, headers, body: text });
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const admin = (method: string, path: string, body?: unknown) => call(method, path, ADMIN_TOKEN, body);
  const crawler = (method: string, path: string, body?: unknown) => call(method, path, CRAWLER_TOKEN, body);
  const proxy = async (name: string) => (await admin('GET', `/v1/proxies/${name}`)).body;
  const untilReady = (name: string, pred: (p: { status: Record<string, unknown> }) => boolean = () => true) =>
    eventually(
      `${name} Ready`,
      async () => {
        const p = await proxy(name);
        return p?.status?.phase === 'Ready' && pred(p) ? p : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );

  beforeAll(async () => {
    target = await startEchoTarget();
    sm = await startSecretManagerEmulator({ pubsub, log: () => {} });
    const smEndpoint = `${sm.host}:${sm.port}`;
    secrets = createSecretManagerClient(smEndpoint);
    compute = await startComputeEmulator({
      bootDelayMs: 300,
      deleteDelayMs: 200,
      secretManagerEndpoint: smEndpoint,
      addressRange: privateLoopbackRange(),
    });
    const apiPort = await freePort();
    plane = await startTestPlane({
      projectId,
      functions: ['reconcile', 'requeue', 'probe', 'rotation', 'gc', 'snapshot'],
      scheduler: { start: true },
      env: {
        COMPUTE_EMULATOR_HOST: compute.endpoint,
        SECRET_MANAGER_EMULATOR_HOST: smEndpoint,
        // The sweep looks for due proxies five times a second (default once): each step of the proxies'
        // lives (created, running, replaced, deleted) waits for it, and none of them is what this file tests.
        REQUEUE_POLL_MS: '200',
        RECONCILE_PROVISIONING_POLL_MS: '500',
        RECONCILE_DELETION_POLL_MS: '500',
        PROBE_TICK_PERIOD_SECONDS: '2',
        PROBE_CALLER_IPS: '127.0.0.1',
        PROBE_ECHO_URL: `http://127.0.0.1:${apiPort}/v1/echo`,
        LOG_LEVEL: 'debug',
      },
    });
    // Every message on every topic, as a subscriber of its own would see it.
    for (const topic of plane.topology.topics) {
      const [sub] = await plane.pubsub.topic(topic).createSubscription(`${topic}--leak-scan`);
      sub.on('message', (m: Message) => {
        messages.push({
          where: `pubsub ${topic} ${m.id}`,
          text: `${m.data.toString('utf8')} ${m.data.toString('base64')} ${JSON.stringify(m.attributes)}`,
        });
        m.ack();
      });
      observers.push(sub);
    }
    api = await startApi({
      host: '127.0.0.1',
      port: apiPort,
      logDir: plane.logDir,
      env: {
        ...plane.env,
        ADMIN_TOKENS: `leak-admin:${ADMIN_TOKEN}`,
        DISCOVERY_TOKENS: `leak-crawler:${CRAWLER_TOKEN}`,
        WORKER_TOKENS: `${WORKER}:${WORKER_TOKEN}`,
        LEASE_CREDENTIALS_CACHE_SECONDS: '0',
        LOG_LEVEL: 'debug',
      },
    });
    db = new Firestore({ projectId });
    // The external proxy: a forward proxy on a loopback address of its own, outside the Compute emulator's
    // 127.100-249.*.* (the probe's EGRESS tier sees its traffic leave from there), asking for the
    // credentials its secret holds.
    const own = `127.251.${Math.floor(Math.random() * 250)}.${2 + Math.floor(Math.random() * 250)}`;
    upstream = createForwardProxy({
      host: own,
      localAddress: own,
      credentials: `${EXT_USER}:${EXT_PASS}`,
    });
    await upstream.listen();
  }, 180_000);

  afterAll(async () => {
    await gateway?.stop();
    await Promise.all(observers.map((s) => s.close()));
    await api?.stop();
    await plane?.stop();
    await compute?.stop();
    await secrets?.close();
    await sm?.stop();
    await pubsub.close();
    await target?.close();
    await upstream?.close();
    await db?.terminate();
  });

  const secretName = (id: string) => `projects/${projectId}/secrets/${id}`;
  const makeSecret = async (id: string, value: string) => {
    await secrets.createSecret({
      parent: `projects/${projectId}`,
      secretId: id,
      secret: {
        replication: { automatic: {} },
        topics: [{ name: `projects/${projectId}/topics/secret-events` }],
      },
    });
    await secrets.addSecretVersion({ parent: secretName(id), payload: { data: Buffer.from(value) } });
  };
  const spec = (extra: Record<string, unknown>) => ({
    mode: 'managed',
    zone: 'us-central1-a',
    credentialsRef: { secret: 'leak-creds' },
    attributes: { pool: 'leak' },
    healthCheck: { url: `${target.url}/health`, intervalSeconds: 1 },
    ...extra,
  });
  const leaseAndUse = async (pass: string, result: 'ok' | 'rate_limited') => {
    const lease = await crawler('POST', '/v1/leases', {
      selector: { pool: 'leak' },
      ttlSeconds: 60,
      target: 'shop.test',
    });
    expect(lease.status).toBe(201);
    const url = new URL(lease.body.proxy.url);
    expect([decodeURIComponent(url.username), decodeURIComponent(url.password)]).toEqual([USER, pass]);
    const through = await requestViaProxy(
      { host: url.hostname, port: Number(url.port) },
      `${target.url}/page`,
      {
        auth: { user: USER, pass },
      },
    );
    expect(through.status).toBe(200);
    expect((await crawler('POST', `/v1/leases/${lease.body.leaseId}/report`, { result })).status).toBe(204);
    expect((await crawler('DELETE', `/v1/leases/${lease.body.leaseId}`)).status).toBe(204);
  };

  const gatewayGet = async (path: string, what: string) => {
    const res = await fetch(`${gateway!.url}${path}`);
    const text = await res.text();
    gatewayExhibits.push({ where: `gateway ${what} ${path} ${res.status}`, text });
    return text;
  };
  /** The gateway in controller mode against this plane, on loopback; its output goes to gateway.log. */
  const startLeakGateway = async () => {
    gatewayProxyPort = await freePort();
    gateway = await startGatewayService({
      host: '127.0.0.1',
      proxyPort: gatewayProxyPort,
      httpPort: await freePort(),
      logDir: plane.logDir,
      env: {
        ...plane.env,
        METADATA_SERVER_DETECTION: 'none',
        CONTROL_PLANE_URL: api.url,
        GATEWAY_WORKER_ID: WORKER,
        GATEWAY_WORKER_TOKEN: WORKER_TOKEN,
        GATEWAY_CLIENT_USERS: `${GW_USER}:${GW_PASS}`,
        GATEWAY_FETCH_TOKENS: FETCH_TOKEN,
        GATEWAY_SSRF_ALLOW: `127.0.0.1:${target.port}`,
        GATEWAY_START_WAIT_SECONDS: '0',
        GATEWAY_TRAFFIC_LOG_SECONDS: '1',
        GATEWAY_SNAPSHOT_AGE_LOG_SECONDS: '1',
        LOG_LEVEL: 'debug',
      },
    });
  };

  it('runs the whole life of two proxies whose secrets live in Secret Manager, and a gateway’s', {
    timeout: 300_000,
  }, async () => {
    await makeSecret('leak-creds', `${USER}:${PASS_V1}`);
    await makeSecret('leak-init', CLOUD_INIT);
    await makeSecret('leak-ext-creds', `${EXT_USER}:${EXT_PASS}`);
    await makeSecret('leak-bad-creds', `${BAD_USER}:${BAD_PASS}`);
    await startLeakGateway();
    const external = (name: string, pool: string, secret: string, gatewayPool: boolean) =>
      admin('POST', '/v1/proxies', {
        name,
        spec: {
          mode: 'external',
          endpoint: { host: upstream.host, port: upstream.port },
          credentialsRef: { secret },
          attributes: { pool },
          gatewayPool,
          healthCheck: { url: `${target.url}/health`, intervalSeconds: 1 },
        },
      });
    expect((await external('leak-ext', 'leak-gw', 'leak-ext-creds', true)).status).toBe(201);
    expect((await external('leak-bad', 'leak-bad', 'leak-bad-creds', false)).status).toBe(201);
    expect(
      (
        await admin('POST', '/v1/proxies', {
          name: 'leak-a',
          spec: spec({ cloudInit: { secretRef: { secret: 'leak-init' } } }),
        })
      ).status,
    ).toBe(201);
    expect((await admin('POST', '/v1/proxies', { name: 'leak-b', spec: spec({}) })).status).toBe(201);
    const a = await untilReady('leak-a');
    const b = await untilReady('leak-b');
    expect((await crawler('GET', '/v1/proxies?attr.pool=leak&healthy=true')).body.count).toBe(2);

    await leaseAndUse(PASS_V1, 'ok');

    // The gateway: the external proxy Ready, then in the worker's snapshot; one request through it.
    await untilReady('leak-ext');
    await eventually(
      'the gateway serving a snapshot with the external proxy',
      async () => {
        const h = JSON.parse(await gatewayGet('/healthz', 'health'));
        return h.accepting && h.snapshot?.proxies === 1 ? h : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 250 },
    );
    const seenBefore = target.seen.length;
    const viaGateway = await requestViaProxy(
      { host: '127.0.0.1', port: gatewayProxyPort },
      `${target.url}/via-gateway`,
      { auth: { user: GW_USER, pass: GW_PASS } },
    );
    expect(viaGateway.status).toBe(200);
    gatewayExhibits.push({ where: 'gateway proxied answer', text: JSON.stringify(viaGateway) });
    // It went through the external proxy (its own address, its credentials accepted).
    expect(target.seen.slice(seenBefore).find((r) => r.url === '/via-gateway')?.remoteAddress).toBe(
      upstream.host,
    );
    // /v1/fetch with the bearer token, and a client whose password is wrong.
    const fetched = await fetch(`${gateway!.url}/v1/fetch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${FETCH_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${target.url}/via-fetch` }),
    });
    gatewayExhibits.push({ where: `gateway /v1/fetch ${fetched.status}`, text: await fetched.text() });
    expect(fetched.status).toBe(200);
    const refused = await requestViaProxy(
      { host: '127.0.0.1', port: gatewayProxyPort },
      `${target.url}/refused`,
      { auth: { user: GW_USER, pass: WRONG_GW_PASS } },
    );
    expect(refused.status).toBe(407);
    gatewayExhibits.push({ where: 'gateway 407', text: JSON.stringify(refused) });
    // The outcome report reached the control plane.
    await eventually(
      'the gateway’s outcome report',
      async () => ((await db.collection('workerOutcomes').limit(1).get()).empty ? undefined : true),
      { timeoutMs: 20_000, intervalMs: 250 },
    );
    await gatewayGet('/metrics', 'metrics');

    // Error paths: wrong tokens on the admin, crawler and worker routes; credential-like input refused.
    expect((await call('GET', '/v1/proxies', WRONG_TOKEN)).status).toBe(401);
    expect((await call('POST', '/v1/leases', WRONG_TOKEN, { selector: { pool: 'leak' } })).status).toBe(401);
    expect((await call('POST', '/v1/workers/register', WRONG_TOKEN, { workerId: WORKER })).status).toBe(401);
    expect(
      (await admin('POST', '/v1/proxies', { name: 'leak-bad-input', spec: spec({ password: BAD_INPUT }) }))
        .status,
    ).toBe(400);
    expect((await admin('POST', '/v1/proxies', { name: BAD_INPUT, spec: spec({}) })).status).toBe(400);
    expect(
      (
        await admin('POST', '/v1/proxies', {
          name: 'leak-bad-ref',
          spec: spec({ credentialsRef: { secret: BAD_INPUT } }),
        })
      ).status,
    ).toBe(400);
    // The malformed payload is read by the probe (leak-bad, probed every second); a new version of it goes
    // through the rotation function's secret event and reconcile's re-read.
    await secrets.addSecretVersion({
      parent: secretName('leak-bad-creds'),
      payload: { data: Buffer.from(`${BAD_USER}:${BAD_PASS}-v2`) },
    });
    firestoreDumps.push(...(await dumpFirestore(db)));

    // Rotation: the new version replaces both proxies; leases then carry the new credentials.
    await secrets.addSecretVersion({
      parent: secretName('leak-creds'),
      payload: { data: Buffer.from(`${USER}:${PASS_V2}`) },
    });
    await untilReady('leak-b', (p) => p.status.specHash !== b.status.specHash);
    const a2 = await untilReady('leak-a', (p) => p.status.specHash !== a.status.specHash);
    // Its own cloud-init: clients get the version its new VM was made with, not `latest` through the
    // readers' caches, which would still say version 1 (and the probe 407 the new VM) for up to a minute.
    expect(a2.status.servedCredentials).toEqual({ secret: 'leak-creds', version: '2' });
    await eventually(
      'both proxies healthy on their new instances',
      async () => (await crawler('GET', '/v1/proxies?attr.pool=leak&healthy=true')).body.count === 2,
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    await leaseAndUse(PASS_V2, 'rate_limited');
    firestoreDumps.push(...(await dumpFirestore(db)));

    for (const name of ['leak-a', 'leak-b', 'leak-ext', 'leak-bad'])
      expect((await admin('DELETE', `/v1/proxies/${name}`)).status).toBeLessThan(300);
    await eventually(
      'every document gone',
      async () => (await admin('GET', '/v1/proxies')).body.count === 0,
      {
        timeoutMs: 60_000,
        intervalMs: 500,
      },
    );
    const since = new Date();
    await plane.publisher.publish('ticks-gc', Tick, { job: 'gc-sweep' });
    await finishedRun(db, 'gc-sweep', since);
    firestoreDumps.push(...(await dumpFirestore(db)));
    // Its last lines (drain, stop) in gateway.log before the scan.
    await gateway!.stop();
    gateway = undefined;
  });

  it('finds no secret value anywhere but the lease responses’ proxy URL', async () => {
    // The last log lines and messages land: no more ticks, then every log file's size and the message
    // count unchanged for 1 s (30 s deadline).
    await plane.scheduler!.stop();
    const logSizes = () =>
      readdirSync(plane.logDir)
        .sort()
        .map((f) => `${f}:${statSync(join(plane.logDir, f)).size}`);
    await untilStable(() => ({ logs: logSizes(), messages: messages.length }), {
      quietMs: 1_000,
      timeoutMs: 30_000,
      what: 'the logs and the observed messages',
    });
    const values = [
      PASS_V1,
      PASS_V2,
      `${USER}:${PASS_V1}`,
      `${USER}:${PASS_V2}`,
      USER,
      'LEAKMARK-cloudinit-5521',
      CLOUD_INIT,
      ADMIN_TOKEN,
      CRAWLER_TOKEN,
      EXT_USER,
      EXT_PASS,
      `${EXT_USER}:${EXT_PASS}`,
      WORKER_TOKEN,
      GW_USER,
      GW_PASS,
      `${GW_USER}:${GW_PASS}`,
      FETCH_TOKEN,
      BAD_USER,
      BAD_PASS,
      `${BAD_USER}:${BAD_PASS}`,
      WRONG_TOKEN,
      WRONG_GW_PASS,
      BAD_INPUT,
    ];
    const needles = [...new Set(values.flatMap(encodings))];

    const logs = logLines(plane.logDir);
    const responses: Exhibit[] = exchanges.map((x, i) => {
      let body = x.body;
      if (x.method === 'POST' && x.path === '/v1/leases' && x.status === 201) {
        const lease = JSON.parse(x.body);
        // The one place a credential may appear; everything else in this response is scanned too.
        expect(lease.proxy.url).toContain(`${USER}:`);
        lease.proxy.url = '<the proxy URL>';
        body = JSON.stringify(lease);
      }
      return { where: `response #${i} ${x.method} ${x.path} ${x.status}`, text: `${x.headers}\n${body}` };
    });

    // The scan must have had something to read, or "nothing found" would mean nothing.
    const collections = new Set(firestoreDumps.map((e) => e.where.split(' ')[1]!.split('/')[0]));
    for (const c of ['proxies', 'leases', 'health', 'jobRuns', 'snapshots', 'workers', 'workerOutcomes'])
      expect(collections, c).toContain(c);
    expect(logs.filter((l) => l.where.startsWith('function-reconcile')).length).toBeGreaterThan(10);
    for (const fn of ['probe', 'rotation', 'gc', 'requeue', 'snapshot']) {
      expect(
        logs.some((l) => l.where.startsWith(`function-${fn}.log`)),
        fn,
      ).toBe(true);
    }
    expect(logs.some((l) => l.where.startsWith('api.log'))).toBe(true);
    expect(logs.filter((l) => l.where.startsWith('gateway.log')).length).toBeGreaterThan(5);
    expect(messages.some((m) => m.where.startsWith('pubsub secret-events'))).toBe(true);
    expect(messages.some((m) => m.where.startsWith('pubsub gateway-snapshots'))).toBe(true);
    expect(
      gatewayExhibits.some((e) => e.where.startsWith('gateway metrics') && e.text.includes('# TYPE')),
    ).toBe(true);
    // What the origin received: a proxy passes the request on, never the credentials it was given.
    const origin: Exhibit[] = target.seen.map((r, i) => ({
      where: `origin request #${i} ${r.url} from ${r.remoteAddress}`,
      text: `${r.rawHeaders.join('\n')}\n${r.body}`,
    }));
    expect(exchanges.filter((x) => x.path === '/v1/leases' && x.status === 201)).toHaveLength(2);

    console.log(
      `leak scan: ${firestoreDumps.length} documents (${[...collections].join(', ')}), ${logs.length} log lines, ${messages.length} messages, ${responses.length} responses, ${gatewayExhibits.length} gateway answers, ${origin.length} origin requests`,
    );
    // And the scan does see a secret where there is one: the lease responses before redaction.
    const raw = exchanges.filter((x) => x.path === '/v1/leases' && x.status === 201);
    expect(
      findLeaks(
        raw.map((x) => ({ where: 'lease', text: x.body })),
        [PASS_V1, PASS_V2],
      ),
    ).toHaveLength(2);

    expect(findLeaks(firestoreDumps, needles)).toEqual([]);
    expect(findLeaks(logs, needles)).toEqual([]);
    expect(findLeaks(messages, needles)).toEqual([]);
    expect(findLeaks(responses, needles)).toEqual([]);
    expect(findLeaks(gatewayExhibits, needles)).toEqual([]);
    expect(findLeaks(origin, needles)).toEqual([]);
  });
});
