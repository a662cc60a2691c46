// A request's trace reaches the work it causes (brief: structured logs with Cloud Logging's trace fields,
// from the functions too): the API takes it from the request's `traceparent` (or X-Cloud-Trace-Context),
// its reconcile request carries it as a message attribute through the Pub/Sub emulator, and the real
// reconcile function process — behind a real push subscription — logs its pass under the same trace.
import { Firestore } from '@google-cloud/firestore';
import type { Message, Subscription } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { createApp } from '../../functions/api/src/app.js';
import { anyOf } from '../../functions/api/src/auth/authenticator.js';
import { staticTokenAuthenticator } from '../../functions/api/src/auth/static-tokens.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { PubSubReconcilePublisher } from '../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { eventually, functionLog, jsonLines } from './gc-support.js';

const TOKEN = 'trace-test-admin-token-0123456789';
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLOUD_TRACE = '0af7651916cd43dd8448eb211c80319c';

describe('trace propagation: API request → reconcile request → reconcile function', () => {
  let compute: ComputeEmulator;
  let plane: TestPlane;
  let db: Firestore;
  let observer: Subscription;
  const received: Message[] = [];
  const log = memoryLogger({ traceProject: 'trace-proj' });
  let app: ReturnType<typeof createApp>;

  beforeAll(async () => {
    const projectId = testProjectId('demo-trace');
    // External proxies never reach Compute, but the function will not start without an endpoint for it.
    compute = await startComputeEmulator({ bootDelayMs: 60_000 });
    plane = await startTestPlane({
      projectId,
      functions: ['reconcile'],
      env: { COMPUTE_EMULATOR_HOST: compute.endpoint },
    });
    db = new Firestore({ projectId });
    [observer] = await plane.pubsub
      .topic('reconcile-requests')
      .createSubscription('reconcile-requests--trace-observer');
    observer.on('message', (m: Message) => {
      received.push(m);
      m.ack();
    });
    app = createApp({
      version: 'test',
      store: new FirestoreProxyStore(db),
      publisher: new PubSubReconcilePublisher(plane.publisher),
      clock: systemClock,
      auth: anyOf([staticTokenAuthenticator([{ name: 'ops', token: TOKEN }])]),
      log,
    });
  }, 120_000);
  afterAll(async () => {
    await observer?.close();
    await plane?.stop();
    await compute?.stop();
    await db?.terminate();
  });

  const create = (name: string, headers: Record<string, string>) =>
    app.request('/v1/proxies', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({
        name,
        spec: { mode: 'external', endpoint: { host: '127.0.0.1', port: 9, protocol: 'http' } },
      }),
    });
  const requestFor = (proxy: string) =>
    eventually(`the reconcile request for ${proxy}`, () =>
      received.find((m) => JSON.parse(m.data.toString()).proxy === proxy),
    );
  const functionLines = () => jsonLines(functionLog(plane.logDir, 'reconcile'));

  it('carries a traceparent from the request to the reconcile pass it triggers', async () => {
    const res = await create('traced-1', { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` });
    expect(res.status).toBe(201);
    expect(log.lines.find((l) => l.message === 'POST /v1/proxies 201')).toMatchObject({
      'logging.googleapis.com/trace': `projects/trace-proj/traces/${TRACE}`,
      'logging.googleapis.com/spanId': '00f067aa0ba902b7',
      'logging.googleapis.com/trace_sampled': true,
    });

    const message = await requestFor('traced-1');
    expect(message.attributes).toEqual({ proxy: 'traced-1', traceparent: `00-${TRACE}-00f067aa0ba902b7-01` });

    // The function's project is the plane's: its pass names the same trace.
    const pass = await eventually('the reconcile pass of traced-1, logged', () =>
      functionLines().find((l) => l.proxy === 'traced-1' && l.message === 'reconcile pass'),
    );
    expect(pass['logging.googleapis.com/trace']).toBe(`projects/${plane.projectId}/traces/${TRACE}`);
  });

  it('reads X-Cloud-Trace-Context when no traceparent came, and adds nothing when neither did', async () => {
    expect((await create('traced-2', { 'x-cloud-trace-context': `${CLOUD_TRACE}/1;o=0` })).status).toBe(201);
    expect((await create('untraced-1', {})).status).toBe(201);

    expect((await requestFor('traced-2')).attributes).toEqual({
      proxy: 'traced-2',
      traceparent: `00-${CLOUD_TRACE}-0000000000000001-00`,
    });
    expect((await requestFor('untraced-1')).attributes).toEqual({ proxy: 'untraced-1' });

    const untraced = await eventually('the reconcile pass of untraced-1, logged', () =>
      functionLines().find((l) => l.proxy === 'untraced-1' && l.message === 'reconcile pass'),
    );
    expect(Object.keys(untraced).filter((k) => k.startsWith('logging.googleapis.com/'))).toEqual([]);
    const traced = await eventually('the reconcile pass of traced-2, logged', () =>
      functionLines().find((l) => l.proxy === 'traced-2' && l.message === 'reconcile pass'),
    );
    expect(traced['logging.googleapis.com/trace']).toBe(`projects/${plane.projectId}/traces/${CLOUD_TRACE}`);
  });
});
