// The rotation function as deployed, fed by the Secret Manager emulator's own notifications (created with
// the real @google-cloud/secret-manager client): a new version re-enqueues exactly the proxies that
// reference the secret; TOPIC_CONFIGURED, unknown secrets and malformed notifications are acked and logged.
import { Firestore } from '@google-cloud/firestore';
import type { Message, Subscription } from '@google-cloud/pubsub';
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SecretManagerEmulator,
  startSecretManagerEmulator,
} from '../../emulators/secret-manager/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { ReconcileRequest } from '../../shared/src/messages/reconcile-request.js';
import { aProxy, externalSpec, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { eventually, functionLog, jsonLines } from './gc-support.js';

describe('rotation fan-out from Secret Manager notifications (seed §1 Secret watch)', () => {
  const projectId = testProjectId();
  let plane: TestPlane;
  let sm: SecretManagerEmulator;
  let client: SecretManagerServiceClient;
  let db: Firestore;
  let observer: Subscription;
  const requests: ReconcileRequest[] = [];

  const rotationLog = () => jsonLines(functionLog(plane.logDir, 'rotation'));
  const secret = (id: string) => `projects/${projectId}/secrets/${id}`;
  const makeSecret = async (id: string) => {
    await client.createSecret({
      parent: `projects/${projectId}`,
      secretId: id,
      secret: {
        replication: { automatic: {} },
        topics: [{ name: `projects/${projectId}/topics/secret-events` }],
      },
    });
    await client.addSecretVersion({ parent: secret(id), payload: { data: Buffer.from('user:first-Pa55') } });
  };
  /**
   * Waits for `atLeast` requests, then until nothing new has arrived for `quietMs` (so "no more than"
   * assertions mean something). The first wait is not the quiet window's: a chain (Secret Manager → push →
   * rotation → publish → pull) slower than the window read as "settled, none came" on a loaded box.
   */
  const settled = async ({ atLeast = 0, quietMs = 2500 } = {}) => {
    await eventually(
      'the expected reconcile requests',
      () => (requests.length >= atLeast ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    let seen = -1;
    await eventually(
      'the reconcile requests to settle',
      async () => {
        if (requests.length === seen) return true;
        seen = requests.length;
        await new Promise((r) => setTimeout(r, quietMs));
        return requests.length === seen;
      },
      { timeoutMs: 30_000, intervalMs: 0 },
    );
    return requests.splice(0);
  };

  beforeAll(async () => {
    plane = await startTestPlane({ projectId, functions: ['rotation'] });
    // The reconcile function is not hosted here: a pull subscription stands in for it and records.
    [observer] = await plane.pubsub
      .topic('reconcile-requests')
      .createSubscription('reconcile-requests--observer');
    observer.on('message', (m: Message) => {
      requests.push(ReconcileRequest.parse(JSON.parse(m.data.toString('utf8'))));
      m.ack();
    });
    sm = await startSecretManagerEmulator({ pubsub: plane.pubsub, log: () => {} });
    client = createSecretManagerClient(`${sm.host}:${sm.port}`);
    db = new Firestore({ projectId });
    const store = new FirestoreProxyStore(db);
    await store.create(aProxy({ name: 'creds', spec: managedSpec({ credentialsRef: { secret: 'rot' } }) }));
    await store.create(
      aProxy({ name: 'init', spec: managedSpec({ cloudInit: { secretRef: { secret: 'rot' } } }) }),
    );
    await store.create(aProxy({ name: 'ext', spec: externalSpec({ credentialsRef: { secret: 'rot' } }) }));
    await store.create(
      aProxy({ name: 'pinned', spec: managedSpec({ credentialsRef: { secret: 'rot', version: '1' } }) }),
    );
    await store.create(
      aProxy({ name: 'bystander', spec: managedSpec({ credentialsRef: { secret: 'calm' } }) }),
    );
    await store.create(
      aProxy({ name: 'inline', spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }) }),
    );
    await makeSecret('rot');
    await makeSecret('calm');
    await makeSecret('lonely');
  });

  afterAll(async () => {
    await observer?.close();
    await client?.close();
    await sm?.stop();
    await plane?.stop();
    await db?.terminate();
  });

  it('acknowledges TOPIC_CONFIGURED (no data) and SECRET_CREATE; each first version enqueues its followers once', async () => {
    await eventually('three TOPIC_CONFIGURED acks', () =>
      rotationLog().filter((l) => l.message?.startsWith('secret notification topic configured')).length === 3
        ? true
        : undefined,
    );
    // SECRET_CREATE is ignored; each first version is a change for `latest` references, and for 'pinned',
    // made before its version 1 existed: reconcile could not read it and waits out a CloudInitError
    // backoff (up to 10 min) unless the version's arrival enqueues it.
    const first = await settled({ atLeast: 5 });
    expect(first.map((r) => r.proxy).sort()).toEqual(['bystander', 'creds', 'ext', 'init', 'pinned']);
    expect(rotationLog().filter((l) => l.severity === 'ERROR')).toEqual([]);
  });

  it('re-enqueues exactly the proxies that follow the secret, once each, when a version is added', async () => {
    await client.addSecretVersion({
      parent: secret('rot'),
      payload: { data: Buffer.from('user:second-Pa55') },
    });
    const got = await settled({ atLeast: 3 });
    expect(got.map((r) => r.proxy).sort()).toEqual(['creds', 'ext', 'init']);
    expect(got.every((r) => r.reason === 'secret-rotated')).toBe(true);
    expect(rotationLog()).toContainEqual(
      expect.objectContaining({
        message: 'secret changed: referencing proxies re-enqueued',
        secret: 'rot',
        version: '2',
      }),
    );
  });

  it('re-enqueues the pinned proxy too when its own version is disabled', async () => {
    await client.disableSecretVersion({ name: `${secret('rot')}/versions/1` });
    const got = await settled({ atLeast: 4 });
    expect(got.map((r) => r.proxy).sort()).toEqual(['creds', 'ext', 'init', 'pinned']);
  });

  it('acknowledges and logs a version added to a secret no proxy references', async () => {
    await client.addSecretVersion({
      parent: secret('lonely'),
      payload: { data: Buffer.from('user:x-Pa55') },
    });
    await eventually('the unknown-secret log line', () =>
      rotationLog().some(
        (l) =>
          l.secret === 'lonely' && l.message?.startsWith('secret event for a secret no proxy references'),
      ),
    );
    expect(await settled()).toEqual([]);
  });

  it('acknowledges and logs a malformed notification once (no redelivery), without its values', async () => {
    const messageId = await plane.publisher.publishRaw('secret-events', Buffer.from('{}'), {
      eventType: 'SECRET_VERSION_ADD',
      secretId: 'not-a-name:hunter2',
    });
    const logged = () =>
      rotationLog().filter(
        (l) => l.message === 'malformed secret notification acknowledged' && l.messageId === messageId,
      );
    await eventually('the malformed notification to be logged', () => logged().length > 0);
    await new Promise((r) => setTimeout(r, 3000));
    expect(logged()).toHaveLength(1);
    expect(JSON.stringify(rotationLog())).not.toContain('hunter2');
    expect(await settled({ quietMs: 500 })).toEqual([]);
  });
});
