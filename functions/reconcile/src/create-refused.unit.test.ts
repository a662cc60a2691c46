// A create refused for a reason outside the spec, through the real gce provider's classification (its
// instances client a script of answers): on a first deploy, reconcile's grant to act as the VMs' service
// account may not have propagated yet, and every proxy created in that window was latched Failed for good.
import { beforeEach, describe, expect, it } from 'vitest';
import { GceProvider, type InstancesApi } from '../../../shared/src/adapters/gce/gce-provider.js';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { defaultPollIntervals as iv } from '../../../shared/src/domain/reconcile/types.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { InMemoryReplacementSlots } from '../../../shared/src/testing/in-memory-replacement-slots.js';
import { aProxy } from '../../../shared/src/testing/proxy-fixtures.js';
import { handleReconcile, type ReconcileDeps } from './handler.js';
import { noHealth } from './health-source.js';

/** What @google-cloud/compute 6 over REST throws: code = HTTP status, message = the JSON error body. */
const restError = (code: number, reason: string) =>
  Object.assign(
    new Error(
      JSON.stringify({ error: { code, message: 'refused', errors: [{ reason, message: 'refused' }] } }),
    ),
    { code },
  );

let store: InMemoryProxyStore;
let deps: ReconcileDeps;
let inserts: number;
let refusals: Error[];

beforeEach(() => {
  store = new InMemoryProxyStore();
  inserts = 0;
  refusals = [];
  const instances = {
    insert: async () => {
      inserts++;
      const refusal = refusals.shift();
      if (refusal) throw refusal;
      return [{ latestResponse: { status: 'RUNNING' } }];
    },
  } as unknown as InstancesApi;
  const clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
  deps = {
    store,
    providers: new Map([
      ['gce', new GceProvider({ project: 'demo', instances, retry: { attempts: 1, baseMs: 1, maxMs: 1 } })],
    ]),
    cloudInit: {
      resolve: async () => ({ ok: true, script: '#!/bin/sh\n', digest: 'sha256:x', credentialsSecret: null }),
      versionState: async () => 'readable',
    },
    health: noHealth,
    clock,
    intervals: iv,
    publisher: { publish: async () => {} },
    log: memoryLogger(),
    maxPasses: 6,
    slots: new InMemoryReplacementSlots(0, clock),
  };
});

describe('a create refused 403', () => {
  it('is retried, never latched: the next request creates and the proxy is not Failed', async () => {
    await store.create(aProxy({ name: 'p1' }));
    refusals.push(restError(403, 'forbidden'));
    await expect(handleReconcile(deps, { proxy: 'p1', reason: 'created' })).rejects.toMatchObject({
      kind: 'transient',
    });
    expect((await store.get('p1'))!.proxy.status.phase).toBe('Pending');
    await handleReconcile(deps, { proxy: 'p1', reason: 'manual' });
    expect(inserts).toBe(2);
    expect((await store.get('p1'))!.proxy.status).toMatchObject({
      phase: 'Provisioning',
      providerId: expect.stringMatching(/^zones\/us-central1-a\/instances\/pp-/),
    });
  });

  it('for quota keeps its class: QuotaExceeded, retried after QuotaRetry', async () => {
    await store.create(aProxy({ name: 'p1' }));
    refusals.push(restError(403, 'quotaExceeded'));
    await handleReconcile(deps, { proxy: 'p1', reason: 'created' });
    const { status } = (await store.get('p1'))!.proxy;
    expect(status.conditions.find((c) => c.type === 'Provisioned')?.reason).toBe('QuotaExceeded');
    expect(status.phase).not.toBe('Failed');
  });
});
