// The probe function's reconcile requests as its wiring publishes them, read back from the Pub/Sub
// emulator: the same message as every other publisher's (API, requeue, rotation, reconcile's hand-off),
// the `proxy` attribute included, which operators filter a subscription or the logs by.
import type { Message, Subscription } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProbeConfig } from '../../functions/probe/src/config.js';
import { probeDeps } from '../../functions/probe/src/wiring.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { PubSubReconcilePublisher } from '../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { eventually } from './gc-support.js';

describe('probe reconcile requests on Pub/Sub', () => {
  let plane: TestPlane;
  let observer: Subscription;
  const received: Message[] = [];

  beforeAll(async () => {
    plane = await startTestPlane({ projectId: testProjectId() });
    [observer] = await plane.pubsub
      .topic('reconcile-requests')
      .createSubscription('reconcile-requests--probe-observer');
    observer.on('message', (m: Message) => {
      received.push(m);
      m.ack();
    });
  });
  afterAll(async () => {
    await observer?.close();
    await plane?.stop();
  });

  const next = (proxy: string) =>
    eventually(`the request for ${proxy}`, () =>
      received.find((m) => JSON.parse(m.data.toString()).proxy === proxy),
    );

  it('carries the proxy attribute, as the API publisher does', async () => {
    const deps = probeDeps(loadProbeConfig(plane.env), memoryLogger());
    await deps.publisher.publish({ proxy: 'probed-1', reason: 'health-transition' });
    await new PubSubReconcilePublisher(plane.publisher).publish({ proxy: 'api-1', reason: 'manual' });

    const fromProbe = await next('probed-1');
    const fromApi = await next('api-1');
    expect(JSON.parse(fromProbe.data.toString())).toEqual({ proxy: 'probed-1', reason: 'health-transition' });
    expect(fromProbe.attributes).toEqual({ proxy: 'probed-1' });
    expect(Object.keys(fromProbe.attributes).sort()).toEqual(Object.keys(fromApi.attributes).sort());
    expect(fromProbe.orderingKey ?? '').toBe(fromApi.orderingKey ?? '');
  });
});
