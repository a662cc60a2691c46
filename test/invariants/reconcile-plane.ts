// In-process reconcile with the real adapters (Firestore emulator, gce provider → Compute emulator
// through @google-cloud/compute), for the invariant tests: concurrency is controlled by the test, not
// by Pub/Sub's delivery timing, while every call still crosses a real socket to a real emulator.
import { Firestore } from '@google-cloud/firestore';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import type { CloudInitResolver } from '../../functions/reconcile/src/cloud-init.js';
import type { ReconcileDeps } from '../../functions/reconcile/src/handler.js';
import { noHealth } from '../../functions/reconcile/src/health-source.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreReplacementSlots } from '../../shared/src/adapters/firestore/replacement-slots.js';
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { defaultPollIntervals } from '../../shared/src/domain/reconcile/types.js';
import type { ReconcileRequest } from '../../shared/src/messages/reconcile-request.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import type { ConditionalWrite, ProxyStore } from '../../shared/src/ports/proxy-store.js';
import { testProjectId } from '../support/emulators.js';
import { type InstanceEvent, recordInstanceEvents } from '../support/instance-events.js';

/** Counts every write the reconcile side attempts and makes, by kind. */
export class CountingStore {
  readonly writes: Array<{ op: string; name: string; outcome: ConditionalWrite }> = [];
  constructor(readonly inner: ProxyStore) {}
  wrap(): ProxyStore {
    const inner = this.inner;
    const record = async (op: string, name: string, w: Promise<ConditionalWrite>) => {
      const outcome = await w;
      this.writes.push({ op, name, outcome });
      return outcome;
    };
    return {
      get: (n) => inner.get(n),
      list: (f) => inner.list(f),
      listAll: (f) => inner.listAll(f),
      listPage: (f, p) => inner.listPage(f, p),
      liveUids: () => inner.liveUids(),
      holdsUid: (u) => inner.holdsUid(u),
      recordsInstance: (p) => inner.recordsInstance(p),
      listDue: (u, l) => inner.listDue(u, l),
      create: (p) => inner.create(p),
      replaceSpec: (n, s, v) => record('replaceSpec', n, inner.replaceSpec(n, s, v)),
      requestDeletion: (n, a, v) => record('requestDeletion', n, inner.requestDeletion(n, a, v)),
      writeStatus: (n, s, v) => record('writeStatus', n, inner.writeStatus(n, s, v)),
      deleteDocument: (n, v) => record('deleteDocument', n, inner.deleteDocument(n, v)),
    };
  }
  written(): number {
    return this.writes.filter((w) => w.outcome === 'written').length;
  }
}

export const inlineCloudInit: CloudInitResolver = {
  resolve: async () => ({
    ok: true,
    script: '#!/bin/sh\n',
    digest: 'sha256:inline',
    credentialsSecret: null,
  }),
  versionState: async () => 'readable',
};

export interface ReconcilePlane {
  projectId: string;
  db: Firestore;
  store: FirestoreProxyStore;
  counting: CountingStore;
  compute: ComputeEmulator;
  deps: ReconcileDeps;
  published: ReconcileRequest[];
  /** The Compute emulator's instance inserts and deletes, in the order they happened. */
  instanceEvents: InstanceEvent[];
  stop(): Promise<void>;
}

export async function startReconcilePlane(opts: { bootDelayMs: number }): Promise<ReconcilePlane> {
  const projectId = testProjectId('demo-inv');
  const instances = recordInstanceEvents();
  const instanceEvents = instances.events;
  const compute = await startComputeEmulator({
    bootDelayMs: opts.bootDelayMs,
    deleteDelayMs: 300,
    log: instances.log,
  });
  const gce = makeGceProvider({ project: projectId, computeEndpoint: compute.endpoint });
  const db = new Firestore({ projectId });
  const store = new FirestoreProxyStore(db);
  const counting = new CountingStore(store);
  const published: ReconcileRequest[] = [];
  const deps: ReconcileDeps = {
    store: counting.wrap(),
    providers: new Map([['gce', gce.provider]]),
    cloudInit: inlineCloudInit,
    health: noHealth,
    clock: systemClock,
    intervals: { ...defaultPollIntervals, ProvisioningPoll: 500, DeletionPoll: 500, DriftPoll: 1_000 },
    publisher: { publish: async (r) => void published.push(r) },
    log: memoryLogger(),
    maxPasses: 25,
    slots: new FirestoreReplacementSlots(db, { limit: 5, clock: systemClock }),
  };
  return {
    projectId,
    db,
    store,
    counting,
    compute,
    deps,
    published,
    instanceEvents,
    stop: async () => {
      await gce.close();
      await compute.stop();
      await db.terminate();
    },
  };
}
