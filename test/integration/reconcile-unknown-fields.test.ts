// A reconcile request from a newer publisher, mid-rollout, end to end: the real reconcile function
// (functions-framework behind a Pub/Sub emulator push) reads a request carrying a top-level field it does
// not know, drops it, says so once by name, and runs the pass — the instance is created on the Compute
// emulator and the status recorded in Firestore. Refused as poison (a strict received schema), the request
// would run nothing: an unrecorded instance's delete would wait 10-20 minutes for the orphan GC
// (docs/architecture.md § 1).
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { instanceNameFromUid } from '../../shared/src/domain/instance-name.js';
import { ReconcileRequest } from '../../shared/src/messages/reconcile-request.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { eventually, functionLog, jsonLines } from './gc-support.js';

const SECRET_LOOKING = 'hunter2-in-a-new-field';

describe('reconcile reads a request with a field it does not know', () => {
  const projectId = testProjectId('demo-rfld');
  let compute: ComputeEmulator;
  let plane: TestPlane;
  let db: Firestore;
  let store: FirestoreProxyStore;
  const reconcileLog = () => jsonLines(functionLog(plane.logDir, 'reconcile'));

  beforeAll(async () => {
    compute = await startComputeEmulator({ bootDelayMs: 60_000, deleteDelayMs: 100 });
    plane = await startTestPlane({
      projectId,
      functions: ['reconcile'],
      env: { COMPUTE_EMULATOR_HOST: compute.endpoint },
    });
    db = new Firestore({ projectId });
    store = new FirestoreProxyStore(db);
  }, 120_000);

  afterAll(async () => {
    await plane?.stop();
    await compute?.stop();
    await db?.terminate();
  });

  it('runs its pass, and names the field once at WARNING, never its value', async () => {
    const proxy = aProxy({ name: 'newer', spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }) });
    await store.create(proxy);
    const payload = { proxy: 'newer', reason: 'created', origin: SECRET_LOOKING };
    // What a newer publisher sends: our own send schema refuses it (a typo in our publisher fails).
    expect(ReconcileRequest.safeParse(payload).success).toBe(false);
    const messageId = await plane.publisher.publishRaw(
      'reconcile-requests',
      Buffer.from(JSON.stringify(payload)),
      { proxy: 'newer' },
    );
    const status = await eventually(
      'the pass to record the instance it created',
      async () => {
        const s = (await store.get('newer'))?.proxy.status;
        return s?.providerId ? s : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 250 },
    );
    expect(status.providerId).toBe(`zones/us-central1-a/instances/${instanceNameFromUid(proxy.uid)}`);
    expect(
      compute.admin.instances({ project: projectId }).filter((i) => i.labels['proxyplane-uid'] === proxy.uid),
    ).toHaveLength(1);
    const warned = reconcileLog().filter((l) => l.event === 'pubsub.unknown_fields');
    expect(warned).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        topic: 'reconcile-requests',
        proxy: 'newer',
        fields: ['origin'],
        messageId,
      }),
    ]);
    expect(reconcileLog().filter((l) => l.message === 'malformed reconcile request acknowledged')).toEqual(
      [],
    );
    expect(JSON.stringify(reconcileLog())).not.toContain('hunter2');
  });
});
