// The handler over the in-memory store and a fake provider: whole lifecycles, write counts, requeue
// timing and error mapping, with a manual clock. The same flows against Firestore and the compute
// emulator live under test/integration.

import { beforeEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { healthInstanceKey } from '../../../shared/src/domain/health/instance-key.js';
import { instanceNameFromUid } from '../../../shared/src/domain/instance-name.js';
import { type ManagedSpec, ProvisionedReason, type ProxyResource } from '../../../shared/src/domain/proxy.js';
import { SAFETY_NET_MS } from '../../../shared/src/domain/reconcile/patch-status.js';
import { defaultPollIntervals as iv } from '../../../shared/src/domain/reconcile/types.js';
import { specHash } from '../../../shared/src/domain/spec-hash.js';
import type { ReconcileRequest } from '../../../shared/src/messages/reconcile-request.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { ProviderError } from '../../../shared/src/ports/provider.js';
import {
  type ConditionalWrite,
  type StoredProxy,
  StoreError,
} from '../../../shared/src/ports/proxy-store.js';
import { FakeProvider } from '../../../shared/src/testing/fake-provider.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { InMemoryReplacementSlots } from '../../../shared/src/testing/in-memory-replacement-slots.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { aProxy, externalSpec, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import type { CloudInitResolver } from './cloud-init.js';
import { handleReconcile, onReconcileEvent, PASS_START_BUDGET_MS, type ReconcileDeps } from './handler.js';
import { type HealthSource, noHealth } from './health-source.js';

const script = { ok: true as const, script: '#!/bin/sh\n', digest: 'sha256:x', credentialsSecret: null };

function setup(maxReplacing = 0) {
  const store = new InMemoryProxyStore();
  const provider = new FakeProvider();
  const clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
  const published: ReconcileRequest[] = [];
  const log = memoryLogger();
  let cloudInit: Awaited<ReturnType<CloudInitResolver['resolve']>> = script;
  const deps: ReconcileDeps = {
    store,
    providers: new Map([['gce', provider]]),
    cloudInit: { resolve: async () => cloudInit, versionState: async () => 'readable' },
    health: noHealth,
    clock,
    intervals: iv,
    publisher: { publish: async (r) => void published.push(r) },
    log,
    maxPasses: 6,
    slots: new InMemoryReplacementSlots(maxReplacing, clock),
  };
  const run = (proxy = 'p1', reason: ReconcileRequest['reason'] = 'requeue') =>
    handleReconcile(deps, { proxy, reason });
  const doc = async (name = 'p1') => (await store.get(name))?.proxy ?? null;
  const setCloudInit = (c: typeof cloudInit) => {
    cloudInit = c;
  };
  return { store, provider, clock, published, log, deps, run, doc, setCloudInit, slots: deps.slots };
}

let t: ReturnType<typeof setup>;
const create = (p: ProxyResource = aProxy({ name: 'p1' })) => t.store.create(p);
/** A reconcile request for p1 as Pub/Sub pushes it (publishTime: when it was published). */
const pushed = (reason: string, messageId: string, publishTime?: string) => {
  const data = Buffer.from(JSON.stringify({ proxy: 'p1', reason })).toString('base64');
  return onReconcileEvent(t.deps, {
    data: { message: { data, messageId, ...(publishTime ? { publishTime } : {}) } },
  });
};
/** The due time of a status whose delivery carries on by itself (RequeueNow, a write before a throw). */
const safetyNet = () => new Date(t.clock.now().getTime() + SAFETY_NET_MS);
/** The cloud-init of credentials version `n`: its script and the digest the spec hash takes. */
const version = (n: number) => ({ ...script, script: `#!/bin/sh\n# version ${n}\n`, digest: `sha256:v${n}` });
/** p1 created and its VM seen Running (Provisioned, unless a pass fails). Returns the VM's providerId. */
async function provisioned(): Promise<string | undefined> {
  await create();
  await t.run('p1', 'created');
  t.provider.bootAll();
  t.clock.advance(iv.ProvisioningPoll);
  await t.run('p1', 'requeue');
  return [...t.provider.instances.keys()][0];
}

/** p1 created and its VM seen Running (Provisioned), the cloud-init resolving as `resolve` says. */
async function provisionedWith(resolve: CloudInitResolver['resolve']): Promise<void> {
  t.deps.cloudInit = { resolve, versionState: async () => 'readable' };
  await provisioned();
  expect((await t.doc())?.status.phase).toBe('Provisioned');
}

/** p1 created and its create refused for good: the latch. Returns the status then written. */
async function latched(): Promise<ProxyResource['status']> {
  await create();
  t.provider.failNext('create', 'permanent');
  await t.run('p1', 'created');
  return (await t.doc())!.status;
}

/**
 * A latch over a VM with its hash unknown: p1 latched, a manual attempt's VM created, then the latched
 * status written back with that VM's providerId and specHash '' (a status recordBeforeRetry wrote before it
 * cleared the latch, or a latch recorded after it). Returns the latched status and the VM's providerId.
 */
async function latchedOverUnhashedVm(): Promise<{ latched: ProxyResource['status']; providerId: string }> {
  const status = await latched();
  await t.run('p1', 'manual'); // creates the VM
  const [providerId] = [...t.provider.instances.keys()];
  const stored = (await t.store.get('p1'))!;
  await t.store.writeStatus('p1', { ...status, providerId: providerId!, specHash: '' }, stored.version);
  return { latched: status, providerId: providerId! };
}

/** `meanwhile` runs right after the next slot take is answered, before the pass that took it goes on. */
function afterFirstTake(meanwhile: () => Promise<void>): void {
  const take = t.slots.take.bind(t.slots);
  t.slots.take = async (holder, intent) => {
    const granted = await take(holder, intent);
    t.slots.take = take;
    await meanwhile();
    return granted;
  };
}

/** The first status write loses to `meanwhile` (another writer, run on the document as it is then). */
function loseFirstWrite(meanwhile: (name: string, fresh: StoredProxy) => Promise<void>): void {
  const real = t.store.writeStatus.bind(t.store);
  t.store.writeStatus = async (name) => {
    t.store.writeStatus = real; // `meanwhile` and every later write go through as usual
    await meanwhile(name, (await t.store.get(name))!);
    return 'conflict';
  };
}

/**
 * The next status write is `instead`'s to do: `write` makes it as asked, and t.store.writeStatus, restored
 * first, lets `instead` and every later write go through as usual.
 */
function onNextWrite(
  instead: (write: () => Promise<ConditionalWrite>, name: string) => Promise<ConditionalWrite>,
): void {
  const real = t.store.writeStatus.bind(t.store);
  t.store.writeStatus = async (name, status, version) => {
    t.store.writeStatus = real;
    return instead(() => real(name, status, version), name);
  };
}

describe('a drift poll whose pass fails', () => {
  beforeEach(() => {
    t = setup();
  });

  // The requeue sweep publishes a steady proxy's drift slot as a drift-poll: its next slot polls again. A
  // Compute outage of hours otherwise kept a retry chain per DriftPoll per steady proxy in flight (each
  // retried for ~90 minutes), ~15× the usual Compute calls, a dead letter per proxy per DriftPoll, and all of
  // them back at once when it cleared.
  it('is acknowledged (logged), not retried; the same failure on any other request is retried', async () => {
    await provisioned();
    t.provider.failNext('get', 'transient');
    await expect(t.run('p1', 'drift-poll')).resolves.toMatchObject({ last: 'drift-poll-failed' });
    const line = t.log.lines.find((l) => l.event === 'reconcile.drift_poll_failed');
    // Counted by Terraform (drift_polls_failed): the fields its contract names are on the line.
    expect(line && missingContractFields(line)).toEqual([]);
    t.provider.failNext('get', 'transient');
    await expect(t.run('p1', 'requeue')).rejects.toThrow(/transient|get/);
    // The next slot's poll goes through.
    await expect(t.run('p1', 'drift-poll')).resolves.toMatchObject({ passes: 1 });
    expect((await t.doc())!.status.phase).toBe('Provisioned');
  });

  it('is retried when it asked Compute to delete the VM: the delete may have landed', async () => {
    const providerId = (await provisioned())!;
    t.provider.setState(providerId, 'Stopped');
    t.provider.failNext('delete', 'transient');
    // Every status write fails too (Firestore in passing): nothing records the delete begun.
    const write = t.store.writeStatus.bind(t.store);
    t.store.writeStatus = async () => {
      throw new StoreError('unavailable', 'blip');
    };
    await expect(t.run('p1', 'drift-poll')).rejects.toThrow();
    expect(t.provider.callsOf('delete')).toBeGreaterThan(0);
    t.store.writeStatus = write;
  });
});

describe('reconcile handler: managed lifecycle', () => {
  beforeEach(() => {
    t = setup();
  });

  it('creates, polls after ProvisioningPoll, records the ip: 3 writes from create to Provisioned', async () => {
    await create();
    await t.run('p1', 'created');
    let p = (await t.doc())!;
    expect(p.status).toMatchObject({ phase: 'Provisioning', providerId: expect.stringMatching(/^zones\//) });
    expect(p.status.nextReconcileAt).toEqual(new Date(t.clock.now().getTime() + iv.ProvisioningPoll));
    t.provider.bootAll();
    t.clock.advance(iv.ProvisioningPoll);
    await t.run();
    p = (await t.doc())!;
    expect(p.status).toMatchObject({ phase: 'Provisioned', ip: '10.0.0.10', nextReconcileAt: null });
    expect(t.store.writes).toBe(3);
    expect(t.provider.created).toBe(1);
  });

  // GCE holding an instance PENDING for capacity (or STAGING, REPAIRING): the proxy never serves, and the
  // slower poll says nothing on its own. Each pass past 20 minutes says so, on a line an alert counts.
  it('an instance booting past 20 minutes: each pass logs proxy.boot_slow, none before', async () => {
    await create();
    await t.run('p1', 'created');
    t.clock.advance(iv.ProvisioningPoll);
    await t.run(); // the first pass that sees it booting: the boot counts from here
    const slow = () => t.log.lines.filter((l) => l.event === 'proxy.boot_slow');
    t.clock.advance(19 * 60_000);
    await t.run();
    expect(slow()).toEqual([]);
    t.clock.advance(2 * 60_000);
    await t.run();
    expect(slow()).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        proxy: 'p1',
        zone: expect.any(String),
        bootingMinutes: 21,
      }),
    ]);
    expect(missingContractFields(slow()[0]!)).toEqual([]);
    t.provider.bootAll();
    t.clock.advance(60_000);
    await t.run();
    expect(slow()).toHaveLength(1); // serving now
  });

  it('a steady proxy costs zero writes per pass', async () => {
    await create();
    await t.run('p1', 'created');
    t.provider.bootAll();
    await t.run();
    const writes = t.store.writes;
    for (let i = 0; i < 5; i++) {
      t.clock.advance(iv.DriftPoll);
      await t.run();
    }
    expect(t.store.writes).toBe(writes);
    expect(t.provider.callsOf('get')).toBe(6);
  });

  it('replaces on a spec edit: delete, poll until gone, then create in the same delivery', async () => {
    await create();
    await t.run('p1', 'created');
    t.provider.bootAll();
    await t.run();
    const before = (await t.store.get('p1'))!;
    await t.store.replaceSpec('p1', managedSpec({ machineType: 'e2-medium' }), before.version);
    await t.run('p1', 'spec-changed');
    expect(t.provider.callsOf('delete')).toBe(1);
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioning', ip: null });
    t.clock.advance(iv.DeletionPoll);
    await t.run(); // still deleting (one poll)
    t.clock.advance(iv.DeletionPoll);
    const outcome = await t.run(); // gone → RequeueNow in-process → create
    expect(outcome.passes).toBe(2);
    expect(t.provider.created).toBe(2);
    const [inst] = [...t.provider.instances.values()];
    expect(inst?.request.machineType).toBe('e2-medium');
    expect((await t.doc())!.status.phase).toBe('Provisioning');
  });

  it('deletes the instance, polls until gone, then deletes the document', async () => {
    await create();
    await t.run('p1', 'created');
    await t.store.requestDeletion('p1', t.clock.now());
    await t.run('p1', 'delete-requested');
    expect((await t.doc())!.status.phase).toBe('Deleting');
    t.clock.advance(iv.DeletionPoll);
    await t.run();
    expect(await t.doc()).not.toBeNull();
    t.clock.advance(iv.DeletionPoll);
    await t.run();
    expect(await t.doc()).toBeNull();
    expect(t.provider.instances.size).toBe(0);
  });

  // GCE refuses the delete until the insert Operation is DONE ('not-ready'): each DeletionPoll pass asks
  // again (never a tight loop, never taken for done), and the one after the creation finishes is taken.
  it('a proxy deleted while its instance is being created deletes it once the creation finishes', async () => {
    t.provider.refuseDeletesWhileCreating = true;
    await create();
    await t.run('p1', 'created');
    await t.store.requestDeletion('p1', t.clock.now());
    await t.run('p1', 'delete-requested');
    const provisioned = async () => (await t.doc())!.status.conditions.find((c) => c.type === 'Provisioned');
    expect((await t.doc())!.status).toMatchObject({
      phase: 'Deleting',
      nextReconcileAt: new Date(t.clock.now().getTime() + iv.DeletionPoll),
    });
    // The delete was refused, not under way: the status says what reconcile waits for.
    expect(await provisioned()).toMatchObject({
      status: 'False',
      reason: ProvisionedReason.DeletionWaitingForCreation,
      message: "waiting for the instance's creation to finish before deleting it",
    });
    const writes = t.store.writes;
    t.clock.advance(iv.DeletionPoll);
    await t.run();
    expect(t.provider.callsOf('delete')).toBe(2);
    expect([...t.provider.instances.values()][0]?.deletingFor).toBeNull();
    // Refused again: only the due time moves.
    expect(t.store.writes).toBe(writes + 1);
    expect((await provisioned())?.reason).toBe(ProvisionedReason.DeletionWaitingForCreation);
    t.provider.bootAll();
    t.clock.advance(iv.DeletionPoll);
    await t.run();
    expect(await provisioned()).toMatchObject({
      reason: ProvisionedReason.Deleting,
      message: 'deleting the instance',
    });
    for (let i = 0; i < 4 && (await t.doc()); i++) {
      t.clock.advance(iv.DeletionPoll);
      await t.run();
    }
    expect(await t.doc()).toBeNull();
    expect(t.provider.instances.size).toBe(0);
  });

  it('quota: QuotaExceeded and QuotaRetry, then recovery once the fault clears', async () => {
    await create();
    t.provider.failNext('create', 'quota');
    await t.run('p1', 'created');
    let p = (await t.doc())!;
    expect(p.status.conditions[0]).toMatchObject({
      type: 'Provisioned',
      status: 'False',
      reason: 'QuotaExceeded',
    });
    expect(p.status.nextReconcileAt).toEqual(new Date(t.clock.now().getTime() + iv.QuotaRetry));
    expect(t.log.lines).toContainEqual(
      expect.objectContaining({ event: 'provider.quota_exceeded', proxy: 'p1', zone: 'us-central1-a' }),
    );
    // Every field terraform/monitoring.tf reads from the line (shared/src/testing/log-contract.ts).
    const quota = t.log.lines.filter((l) => l.event === 'provider.quota_exceeded');
    expect(quota.map(missingContractFields)).toEqual([[]]);
    t.clock.advance(iv.QuotaRetry);
    await t.run();
    t.provider.bootAll();
    await t.run();
    p = (await t.doc())!;
    expect(p.status.phase).toBe('Provisioned');
  });

  it('an asynchronous quota failure (inside the operation) surfaces as QuotaExceeded, not a create loop', async () => {
    await create();
    t.provider.failCreatesAsync({ kind: 'quota', message: 'QUOTA_EXCEEDED' });
    await t.run('p1', 'created');
    t.clock.advance(iv.ProvisioningPoll);
    await t.run();
    const p = (await t.doc())!;
    expect(p.status).toMatchObject({ providerId: null, phase: 'Pending' });
    expect(p.status.conditions[0]?.reason).toBe('QuotaExceeded');
    expect(t.provider.callsOf('create')).toBe(1);
  });

  it('permanent: Failed, and no provider call until the spec changes', async () => {
    await create();
    t.provider.failNext('create', 'permanent');
    await t.run('p1', 'created');
    expect((await t.doc())!.status.phase).toBe('Failed');
    // failureReason is the Provisioned condition's code (the alert's label); `reason` stays the request's.
    const failed = t.log.lines.filter((l) => l.event === 'proxy.failed');
    expect(failed).toEqual([
      expect.objectContaining({
        severity: 'ERROR',
        proxy: 'p1',
        reason: 'created',
        failureReason: ProvisionedReason.PermanentError,
        detail: expect.any(String),
      }),
    ]);
    expect(failed[0]!.detail).not.toBe('');
    expect(missingContractFields(failed[0]!)).toEqual([]);
    const calls = t.provider.calls.length;
    const writes = t.store.writes;
    for (const reason of ['requeue', 'health-transition'] as const) await t.run('p1', reason);
    expect(t.provider.calls.length).toBe(calls);
    expect(t.store.writes).toBe(writes);
    const v = (await t.store.get('p1'))!.version;
    await t.store.replaceSpec('p1', managedSpec({ machineType: 'e2-micro' }), v);
    await t.run('p1', 'spec-changed');
    expect(t.provider.created).toBe(1);
    expect((await t.doc())!.status.phase).toBe('Provisioning');
  });

  // A cause outside the spec — a grant that had not propagated, a network missing from the configuration —
  // is fixed with no spec edit to unlatch the proxy: `proxies reconcile` gives it one fresh attempt.
  it('a manual request runs one attempt past the latch: latched again if it fails for good, else created', async () => {
    await create();
    t.provider.failNext('create', 'permanent');
    await t.run('p1', 'created');
    expect((await t.doc())!.status.phase).toBe('Failed');
    t.provider.failNext('create', 'permanent');
    await t.run('p1', 'manual');
    expect(t.provider.callsOf('create')).toBe(2);
    expect((await t.doc())!.status.phase).toBe('Failed');
    await t.run('p1', 'requeue'); // latched again: nothing
    expect(t.provider.callsOf('create')).toBe(2);
    await t.run('p1', 'manual');
    expect(t.provider.callsOf('create')).toBe(3);
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioning', providerId: expect.any(String) });
    expect(t.provider.created).toBe(1);
  });

  // A new version of a secret the proxy names (its cloud-init's `secretRef`, its credentials) changed what
  // it is built from with no generation bump: the script that GCE refused for good may be fixed by it.
  it('a secret rotated runs one attempt past the latch, as a manual request does', async () => {
    await create();
    t.provider.failNext('create', 'permanent');
    await t.run('p1', 'created');
    expect((await t.doc())!.status.phase).toBe('Failed');
    await t.run('p1', 'requeue'); // latched: nothing
    expect(t.provider.callsOf('create')).toBe(1);
    await t.run('p1', 'secret-rotated');
    expect(t.provider.callsOf('create')).toBe(2);
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioning', providerId: expect.any(String) });
  });

  it('a manual attempt past the latch whose write is lost is re-run past it: the VM it made is not hidden', async () => {
    await create();
    t.provider.failNext('create', 'permanent');
    await t.run('p1', 'created');
    loseFirstWrite(async () => {});
    await t.run('p1', 'manual');
    const [providerId] = [...t.provider.instances.keys()];
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioning', providerId });
  });

  // The write that would record the manual attempt's VM throws (Firestore unavailable): recordBeforeRetry
  // names it, its hash unknown, and the latch is gone with the create it recorded as failed for good. The
  // redelivery's adopt pass records the hash and asks to run again at once; the next pass decides on the VM.
  it('a manual attempt whose status write throws: its VM is recorded Provisioning, the redelivery adopts and provisions it, a later failure for good latches again', async () => {
    expect((await latched()).phase).toBe('Failed');
    onNextWrite(async () => {
      throw new StoreError('unavailable', 'blip'); // one blip: the manual pass's own write
    });
    await expect(t.run('p1', 'manual')).rejects.toThrow(/blip/);
    const [providerId] = [...t.provider.instances.keys()];
    // Recorded before the retry as the create arm would have: the latch is gone with the failed create.
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioning', providerId, specHash: '' });
    await t.run('p1', 'manual'); // the redelivery
    let status = (await t.doc())!.status;
    expect(status).toMatchObject({ phase: 'Provisioning', providerId });
    expect(status.nextReconcileAt).not.toBeNull();
    expect(t.provider.callsOf('create')).toBe(2);
    t.provider.bootAll();
    t.clock.advance(iv.ProvisioningPoll);
    await t.run('p1', 'requeue');
    expect((await t.doc())!.status.phase).toBe('Provisioned');
    // The latch still holds past that attempt: the VM gone and its re-create refused for good (a pass
    // chained by RequeueNow, instance-missing → create) latches it again, and plain requests leave it be.
    t.provider.instances.delete(providerId!);
    t.provider.failNext('create', 'permanent');
    t.clock.advance(iv.DriftPoll);
    await t.run('p1', 'requeue');
    status = (await t.doc())!.status;
    expect(status).toMatchObject({ phase: 'Failed', nextReconcileAt: null });
    expect(t.provider.callsOf('create')).toBe(3);
    await t.run('p1', 'requeue');
    expect(t.provider.callsOf('create')).toBe(3);
  });

  // The manual request's redeliveries may run out (dead-lettered) before one lands, and a delivery that
  // adopts past its time budget hands off to a plain `requeue`: what the sweep and the hand-off send meets
  // the latch. So the status recordBeforeRetry writes does not keep PermanentError: the create the latch
  // recorded as failed for good has just succeeded, and a plain request adopts the VM.
  it('a manual attempt whose status write throws leaves no latch over its VM: the requeue sweep provisions it', async () => {
    expect((await latched()).phase).toBe('Failed');
    onNextWrite(async () => {
      throw new StoreError('unavailable', 'blip'); // one blip: the manual pass's own write
    });
    await expect(t.run('p1', 'manual')).rejects.toThrow(/blip/);
    const [providerId] = [...t.provider.instances.keys()];
    // Due: what lets the requeue sweep find it once the manual request's redeliveries run out.
    expect((await t.doc())!.status).toMatchObject({
      phase: 'Provisioning',
      providerId,
      specHash: '',
      nextReconcileAt: safetyNet(),
    });
    await t.run('p1', 'requeue'); // the sweep's request after a dead letter, not the manual redelivery
    const status = (await t.doc())!.status;
    expect(status).toMatchObject({ phase: 'Provisioning', providerId });
    expect(status.nextReconcileAt).not.toBeNull();
    expect(t.provider.callsOf('create')).toBe(2);
    t.provider.bootAll();
    t.clock.advance(iv.ProvisioningPoll);
    await t.run('p1', 'requeue');
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioned', providerId });
    expect(t.provider.callsOf('create')).toBe(2);
  });

  // A latch over a VM recorded with its hash unknown is still met: a status recordBeforeRetry wrote before it
  // cleared the latch (documents in Firestore keep it), or a latch recorded after it (the provider, the
  // cloud-init failing for good on the redelivery). A manual request's adopt pass records the hash and asks
  // again at once, the status still latched: the pass it chains is still that attempt, past the latch.
  it('a manual request on a latch over a VM with its hash unknown adopts it and goes on past the latch', async () => {
    const { latched, providerId } = await latchedOverUnhashedVm();
    expect(latched.phase).toBe('Failed');
    await t.run('p1', 'requeue'); // latched: nothing
    expect((await t.doc())!.status).toMatchObject({ phase: 'Failed', specHash: '' });
    await t.run('p1', 'manual');
    const status = (await t.doc())!.status;
    expect(status).toMatchObject({ phase: 'Provisioning', providerId });
    expect(status.specHash).not.toBe('');
    expect(status.nextReconcileAt).not.toBeNull();
    expect(t.provider.callsOf('create')).toBe(2);
  });

  // The chain past the latch, pass by pass: the adopt arm keeps PermanentError and asks again at once (still
  // past it), instance-missing writes Provisioning and asks again (no latch left to go past), the create
  // is refused for good and latches it: one create, and no request but the next manual one goes past it.
  it('a manual request on a latch over a vanished VM with its hash unknown: adopt, instance-missing, one create, latched again', async () => {
    const { latched, providerId } = await latchedOverUnhashedVm();
    expect(latched.phase).toBe('Failed');
    expect((await t.doc())!.status).toMatchObject({ phase: 'Failed', providerId, specHash: '' });
    t.provider.instances.delete(providerId);
    t.provider.failNext('create', 'permanent');
    const creates = t.provider.callsOf('create');
    const outcome = await t.run('p1', 'manual');
    expect(outcome.passes).toBe(3);
    const branches = t.log.lines.filter((l) => l.reason === 'manual' && l.pass !== undefined).slice(-3);
    expect(branches.map((l) => l.branch)).toEqual(['adopt', 'instance-missing', 'create/permanent']);
    expect(t.provider.callsOf('create')).toBe(creates + 1);
    expect((await t.doc())!.status).toMatchObject({
      phase: 'Failed',
      providerId: null,
      nextReconcileAt: null,
    });
    await t.run('p1', 'requeue'); // latched: nothing
    expect(t.provider.callsOf('create')).toBe(creates + 1);
  });

  // A manual request's passes chained by RequeueNow go past a latch only while the status they wrote is
  // still latched (the adopt arm): a latch another request writes after the operator acted is not the one
  // the request was sent for. Here the VM of a Provisioned proxy vanished; the manual pass records it
  // missing (Provisioning, RequeueNow) and, before its next pass, a concurrent request's create fails for
  // good and latches the proxy: that next pass meets the latch and creates nothing.
  it('a manual request does not go past a latch another request wrote between its passes: no second create', async () => {
    const providerId = await provisioned();
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioned', providerId });
    t.provider.instances.delete(providerId!);
    onNextWrite(async (write) => {
      const outcome = await write(); // the manual pass 1: instance-missing
      // Meanwhile, another request's pass creates the instance and is refused for good: latched.
      t.provider.failNext('create', 'permanent');
      await t.run('p1', 'requeue');
      expect((await t.doc())!.status.phase).toBe('Failed');
      return outcome;
    });
    await t.run('p1', 'manual');
    expect(t.provider.callsOf('create')).toBe(2); // the first VM's and the concurrent one: none of its own
    expect((await t.doc())!.status).toMatchObject({
      phase: 'Failed',
      providerId: null,
      nextReconcileAt: null,
    });
  });

  // The same race, but the concurrent request's latch lands before the manual pass 1's write, which loses
  // (a conflict): a re-run is that attempt only while what it read was latched or it created an instance
  // (the re-run records it). Pass 1 read Provisioned and created nothing, so its re-run meets the latch.
  it('a manual pass whose write lost to another request’s latch re-runs without going past it: no second create', async () => {
    const providerId = await provisioned();
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioned', providerId });
    t.provider.instances.delete(providerId!);
    onNextWrite(async (write) => {
      // Before the manual pass 1's write (instance-missing) lands, another request's passes record the VM
      // missing, create it and are refused for good: latched.
      t.provider.failNext('create', 'permanent');
      await t.run('p1', 'requeue');
      expect((await t.doc())!.status.phase).toBe('Failed');
      return write(); // conflict: the version it read is gone
    });
    await t.run('p1', 'manual');
    const manual = t.log.lines.filter((l) => l.reason === 'manual' && l.pass !== undefined);
    expect(manual.map((l) => `${l.result}:${l.branch}`)).toEqual([
      'conflict:instance-missing',
      'unchanged:latched',
    ]);
    expect(t.provider.callsOf('create')).toBe(2); // the first VM's and the concurrent one: none of its own
    expect((await t.doc())!.status).toMatchObject({
      phase: 'Failed',
      providerId: null,
      nextReconcileAt: null,
    });
  });

  // A pass that read the latch and lost its write is still the attempt: its re-run goes past the latch (here
  // the adopt arm's write loses to a writer that left the latch in place, and the re-run adopts again).
  it('a manual pass past a latch whose write lost: the re-run is still that attempt and goes past it', async () => {
    const { providerId } = await latchedOverUnhashedVm();
    expect((await t.doc())!.status).toMatchObject({ phase: 'Failed', providerId, specHash: '' });
    onNextWrite(async (write, name) => {
      const current = (await t.store.get(name))!;
      const moved = { ...current.proxy.status, latencyMillis: 42 }; // a probe's write: still latched
      expect(await t.store.writeStatus(name, moved, current.version)).toBe('written');
      return write(); // conflict
    });
    await t.run('p1', 'manual');
    const manual = t.log.lines.filter((l) => l.reason === 'manual' && l.pass !== undefined).slice(-3);
    expect(manual.map((l) => `${l.result}:${l.branch}`)).toEqual([
      'conflict:adopt',
      'written:adopt',
      'written:provisioning',
    ]);
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioning', providerId });
    expect(t.provider.callsOf('create')).toBe(2);
  });

  // A pass that created and then lost its write is still the attempt, whatever it read: its re-run records
  // the VM (recordingCreated), past a latch another request wrote meanwhile. Met there instead, the VM would
  // be left running under a Failed proxy with nothing due.
  it('a manual pass that created and lost its write to another request’s latch: the re-run records its VM past that latch', async () => {
    await create(); // Pending, no instance: the manual pass creates one
    onNextWrite(async (write) => {
      // Before the manual pass 1's write (create) lands, another request's create is refused for good.
      t.provider.failNext('create', 'permanent');
      await t.run('p1', 'requeue');
      expect((await t.doc())!.status).toMatchObject({ phase: 'Failed', providerId: null });
      return write(); // conflict
    });
    await t.run('p1', 'manual');
    const [providerId] = [...t.provider.instances.keys()];
    const manual = t.log.lines.filter((l) => l.reason === 'manual' && l.pass !== undefined);
    // The re-run reads the VM's own label for its hash (builtFrom): no adopt pass.
    expect(manual.map((l) => `${l.result}:${l.branch}`)).toEqual(['conflict:create', 'written:provisioning']);
    expect(t.provider.callsOf('create')).toBe(2); // its own and the concurrent one: none on the re-run
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioning', providerId });
    expect((await t.doc())!.status.nextReconcileAt).not.toBeNull();
  });

  // Two lost writes: the first pass created a VM and lost to a writer that left the proxy unlatched (a
  // probe's), the second was recording it and lost to another request's latch. The second pass created
  // nothing and read no latch, but it was recording the first's VM: its re-run records it past that latch.
  it('a manual pass recording an earlier pass’s VM, its write lost to another request’s latch: the re-run records it', async () => {
    await create(); // Pending, no instance: the manual pass creates one
    onNextWrite(async (write, name) => {
      const current = (await t.store.get(name))!;
      const moved = { ...current.proxy.status, latencyMillis: 42 }; // a probe's write: unlatched
      expect(await t.store.writeStatus(name, moved, current.version)).toBe('written');
      onNextWrite(async (write2) => {
        // Before pass 2's write (recording the VM) lands, another request's create is refused for good.
        t.provider.failNext('create', 'permanent');
        await t.run('p1', 'requeue');
        expect((await t.doc())!.status.phase).toBe('Failed');
        return write2(); // conflict
      });
      return write(); // conflict
    });
    await t.run('p1', 'manual');
    const [providerId] = [...t.provider.instances.keys()];
    const manual = t.log.lines.filter((l) => l.reason === 'manual' && l.pass !== undefined);
    expect(manual.map((l) => `${l.result}:${l.branch}`)).toEqual([
      'conflict:create',
      'conflict:provisioning',
      'written:provisioning',
    ]);
    expect(t.provider.callsOf('create')).toBe(2); // its own and the concurrent one
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioning', providerId });
    expect((await t.doc())!.status.nextReconcileAt).not.toBeNull();
  });

  // Past the latch it started from, a manual pass's create is refused for good again and its write (the
  // latch again) loses to a writer that kept the latch: the create was the attempt, so the re-run meets
  // the latch — one create for one operator action, not two.
  it('a manual create refused for good again, its write lost: the re-run meets the latch, no second create', async () => {
    const status = await latched();
    // A due time left on the latched status (a sweep's, say): the pass's latch then writes, and can lose.
    const stored = (await t.store.get('p1'))!;
    const due = new Date(t.clock.now().getTime() + 60_000);
    await t.store.writeStatus('p1', { ...status, nextReconcileAt: due }, stored.version);
    const before = t.provider.callsOf('create');
    t.provider.failNext('create', 'permanent');
    onNextWrite(async (write, name) => {
      const current = (await t.store.get(name))!;
      const moved = { ...current.proxy.status, latencyMillis: 42 }; // still latched
      expect(await t.store.writeStatus(name, moved, current.version)).toBe('written');
      return write(); // conflict
    });
    await t.run('p1', 'manual');
    const manual = t.log.lines.filter((l) => l.reason === 'manual' && l.pass !== undefined);
    expect(t.provider.callsOf('create') - before).toBe(1);
    expect(manual.map((l) => l.result)).toEqual(['conflict', 'written']);
    expect((await t.doc())!.status).toMatchObject({ phase: 'Failed', nextReconcileAt: null });
  });

  // A pass that read its VM already written in by another delivery is recording nothing: losing its
  // write to another request's latch ends the attempt, though the VM is still this delivery's unrecorded
  // one — the next passes would adopt the gone VM past that latch and create a third time.
  it('a manual pass that was recording nothing, its write lost to another request’s latch: no create past it', async () => {
    await create(); // Pending
    onNextWrite(async (write) => {
      // A concurrent delivery (its create a 409) records the same VM first: manual pass 1's write loses.
      expect(await write()).toBe('written');
      const [v] = [...t.provider.instances.keys()];
      onNextWrite(async (write2) => {
        // Before manual pass 2's write lands: the VM is gone, another request's create is refused for good.
        t.provider.instances.delete(v!);
        t.provider.failNext('create', 'permanent');
        await t.run('p1', 'requeue');
        expect((await t.doc())!.status.phase).toBe('Failed');
        return write2(); // conflict
      });
      return 'conflict';
    });
    await t.run('p1', 'manual');
    expect(t.provider.callsOf('create')).toBe(2); // the manual one and the other request's refused one
    expect((await t.doc())!.status).toMatchObject({ phase: 'Failed', nextReconcileAt: null });
  });

  // A create refused for quota is no latch again: the attempt goes on past a lost write, and its re-run
  // writes the quota backoff (due), not the old latch with nothing due.
  it('a manual create refused for quota, its write lost: the re-run is still the attempt', async () => {
    const status = await latched();
    const stored = (await t.store.get('p1'))!;
    const due = new Date(t.clock.now().getTime() + 60_000);
    await t.store.writeStatus('p1', { ...status, nextReconcileAt: due }, stored.version);
    const before = t.provider.callsOf('create');
    t.provider.failNext('create', 'quota');
    onNextWrite(async (write, name) => {
      const current = (await t.store.get(name))!;
      const moved = { ...current.proxy.status, latencyMillis: 42 }; // a probe's write: still latched
      expect(await t.store.writeStatus(name, moved, current.version)).toBe('written');
      return write(); // conflict
    });
    await t.run('p1', 'manual');
    const manual = t.log.lines.filter((l) => l.reason === 'manual' && l.pass !== undefined);
    expect(manual.map((l) => `${l.result}:${l.branch}`)[0]).toBe('conflict:create/quota');
    // The re-run creates again (the refused one made nothing) and the proxy goes on, due.
    expect(t.provider.callsOf('create') - before).toBe(2);
    expect((await t.doc())!.status).toMatchObject({ phase: 'Provisioning' });
    expect((await t.doc())!.status.nextReconcileAt).not.toBeNull();
  });

  // The attempt handed off past the in-process bound goes on in the request that takes over: the adopt
  // pass ended past the budget, and a plain requeue would meet the latch over the VM it created.
  it('a manual attempt handed off past the budget over its own VM: the hand-off is manual too', async () => {
    await latched();
    onNextWrite(async (write, name) => {
      const current = (await t.store.get(name))!;
      const moved = { ...current.proxy.status, latencyMillis: 42 }; // a probe's write: still latched
      expect(await t.store.writeStatus(name, moved, current.version)).toBe('written');
      t.clock.advance(PASS_START_BUDGET_MS - 1); // a slow create
      t.provider.failNext('get', 'transient'); // pass 2 cannot read the VM's label: adopt
      onNextWrite(async (write2) => {
        t.clock.advance(10); // pass 2 (the adopt) ends past the budget
        return write2();
      });
      return write(); // conflict
    });
    await t.run('p1', 'manual');
    expect(t.published.map((r) => r.reason)).toContain('manual');
    for (const r of t.published.splice(0)) await t.run(r.proxy, r.reason);
    const doc = (await t.doc())!;
    expect(doc.status.phase).toBe('Provisioning');
    expect(doc.status.nextReconcileAt).not.toBeNull();
  });

  it('starts no pass past the delivery’s time budget: a conflict then is redelivered, not re-run late', async () => {
    await create();
    // The pass ran long (a slow Compute API) and lost its write.
    loseFirstWrite(async () => {
      t.clock.advance(PASS_START_BUDGET_MS);
    });
    await expect(t.run('p1', 'created')).rejects.toThrow(/kept conflicting after 1 passes/);
    // The instance the late pass made is recorded before the throw, so the redelivery adopts it.
    const [providerId] = [...t.provider.instances.keys()];
    expect((await t.doc())!.status).toMatchObject({ providerId });
    await t.run('p1', 'created');
    expect(t.provider.created).toBe(1);
  });

  // The requeue sweep publishes what falls due within its next poll (1 s): a RequeueNow stored as "now" was
  // published again while this very delivery ran its next pass, and the duplicate created too.
  it('RequeueNow runs the next pass at once in the same delivery; its stored due time is no sweep poll away', async () => {
    await create();
    await t.run('p1', 'created');
    t.provider.bootAll();
    await t.run();
    t.provider.instances.clear(); // the VM is gone: instance-missing, RequeueNow, then create
    const dueWithinAPoll: string[][] = [];
    const write = t.store.writeStatus.bind(t.store);
    t.store.writeStatus = async (...args) => {
      const outcome = await write(...args);
      const poll = new Date(t.clock.now().getTime() + 1_000);
      dueWithinAPoll.push((await t.store.listDue(poll, 10)).map((d) => d.name));
      return outcome;
    };
    await expect(t.run()).resolves.toEqual({ passes: 2, last: 'written' });
    expect(t.provider.created).toBe(2);
    expect(dueWithinAPoll).toEqual([[], []]);
    expect((await t.doc())!.status.nextReconcileAt).toEqual(
      new Date(t.clock.now().getTime() + iv.ProvisioningPoll),
    );
  });

  it('a stopped instance is deleted and replaced (cattle)', async () => {
    await create();
    await t.run('p1', 'created');
    t.provider.bootAll();
    await t.run();
    const providerId = (await t.doc())!.status.providerId!;
    t.provider.setState(providerId, 'Stopped');
    await t.run();
    expect((await t.doc())!.status).toMatchObject({ ip: null, phase: 'Provisioning' });
    t.clock.advance(iv.DeletionPoll);
    await t.run();
    t.clock.advance(iv.DeletionPoll);
    await t.run();
    expect(t.provider.created).toBe(2);
    t.provider.bootAll();
    await t.run();
    expect((await t.doc())!.status.phase).toBe('Provisioned');
  });

  it("a stopped instance whose delete fails in passing: its address is written away before Pub/Sub's retry", async () => {
    // GCE released it, and another project's VM may have it: the probe must not dial it with the proxy's
    // credentials through the redelivery chain (up to ~90 minutes of a Compute outage).
    await create();
    await t.run('p1', 'created');
    t.provider.bootAll();
    await t.run();
    const ready = (await t.doc())!.status;
    expect(ready.ip).not.toBeNull();
    t.provider.setState(ready.providerId!, 'Terminated');
    t.provider.failNext('delete', 'transient');
    await expect(t.run()).rejects.toMatchObject({ kind: 'transient' });
    const after = (await t.doc())!.status;
    expect(after).toMatchObject({ ip: null, providerId: ready.providerId });
    expect(after.conditions.find((c) => c.type === 'Provisioned')).toMatchObject({
      status: 'False',
      message: expect.stringMatching(/^instance terminated; retrying after a passing failure: /),
    });
    // Due past Pub/Sub's first redeliveries: the sweep's copy is the retry of last resort.
    expect(after.nextReconcileAt!.getTime() - t.clock.now().getTime()).toBe(60_000);
    // The redelivery deletes it, and the proxy is replaced as usual.
    await t.run();
    for (let i = 0; i < 3 && t.provider.created < 2; i++) {
      t.clock.advance(iv.DeletionPoll);
      await t.run();
    }
    expect(t.provider.created).toBe(2);
  });

  it('a stopped instance seen while the cloud-init cannot be read in passing: its address is written away too', async () => {
    // The delete waits for a fresh cloud-init read; Secret Manager failing it kept the address for as long
    // as the outage lasted.
    await create();
    await t.run('p1', 'created');
    t.provider.bootAll();
    await t.run();
    const ready = (await t.doc())!.status;
    t.provider.setState(ready.providerId!, 'Stopped');
    t.setCloudInit({ ok: false, failure: { kind: 'transient', message: 'unavailable: secret manager' } });
    await expect(t.run()).rejects.toMatchObject({ kind: 'transient' });
    expect((await t.doc())!.status).toMatchObject({
      ip: null,
      providerId: ready.providerId,
      phase: 'Provisioning',
    });
  });

  it.each<[string, () => void]>([
    [
      'the cloud-init cannot be read (Secret Manager)',
      () =>
        t.setCloudInit({ ok: false, failure: { kind: 'transient', message: 'unavailable: secret manager' } }),
    ],
    ['the instance cannot be read (Compute)', () => t.provider.failNext('get', 'transient')],
  ])(
    "a probe verdict reaches status while %s in passing: a dead proxy leaves leasing before Pub/Sub's retry",
    async (_what, outage) => {
      await create();
      await t.run('p1', 'created');
      t.provider.bootAll();
      await t.run();
      const ready = (await t.doc())!;
      expect(ready.status.phase).toBe('Provisioned');
      let verdict = { healthy: false, reason: 'ProbeFailed', message: 'connect refused' };
      t.deps.health = {
        verdictFor: async (p) => ({
          instance: healthInstanceKey(p),
          verdict: { ...verdict, latencyMillis: null, checkedAt: t.clock.now(), unreachableRoutes: [] },
        }),
      };
      // A spec edit meanwhile, which the failing pass never gets to act on.
      const stored = (await t.store.get('p1'))!;
      await t.store.replaceSpec('p1', managedSpec({ machineType: 'e2-medium' }), stored.version);
      outage();
      const writes = t.store.writes;
      await expect(t.run('p1', 'health-transition')).rejects.toMatchObject({ kind: 'transient' });
      const after = (await t.doc())!;
      expect(after.status.conditions.find((c) => c.type === 'Healthy')).toMatchObject({
        status: 'False',
        reason: 'ProbeFailed',
      });
      expect(after.status).toMatchObject({ ip: ready.status.ip, providerId: ready.status.providerId });
      // Not observed: the API's re-publish and the sweep's awaitsPass still see the edit as waiting.
      expect(after.generation).toBe(ready.generation + 1);
      expect(after.status.observedGeneration).toBe(ready.generation);
      expect(t.store.writes).toBe(writes + 1);
      // Pub/Sub's redelivery, still failing, writes nothing more: the verdict is already there.
      outage();
      await expect(t.run('p1', 'health-transition')).rejects.toMatchObject({ kind: 'transient' });
      expect(t.store.writes).toBe(writes + 1);
      // Healthy again is not folded in passing: a pass that succeeds does it (and frees a replacement's
      // slot, which a pass that throws cannot).
      verdict = { healthy: true, reason: 'ProbeSucceeded', message: 'ok' };
      outage();
      await expect(t.run('p1', 'health-transition')).rejects.toMatchObject({ kind: 'transient' });
      expect(t.store.writes).toBe(writes + 1);
      // Nor is a verdict about another instance (one replaced since).
      const other = { healthy: false, reason: 'Other', message: 'another instance', latencyMillis: 5 };
      t.deps.health = {
        verdictFor: async () => ({
          instance: 'zones/z/instances/other@2026-01-01T00:00:00.000Z',
          verdict: { ...other, checkedAt: t.clock.now(), unreachableRoutes: [] },
        }),
      };
      outage();
      await expect(t.run('p1', 'health-transition')).rejects.toMatchObject({ kind: 'transient' });
      expect(t.store.writes).toBe(writes + 1);
    },
  );

  it('transient provider errors are thrown (Pub/Sub retries) and write nothing', async () => {
    await create();
    t.provider.failNext('create', 'transient');
    await expect(t.run('p1', 'created')).rejects.toMatchObject({ kind: 'transient' });
    expect(t.store.writes).toBe(1);
    await t.run('p1', 'created');
    expect((await t.doc())!.status.phase).toBe('Provisioning');
  });

  it('creates from a fresh cloud-init even on a delivery that may use the cache (a rotation elsewhere)', async () => {
    const cached = { ...script, script: '#!/bin/sh\n# version 7\n', digest: 'sha256:v7' };
    const fresh = { ...script, script: '#!/bin/sh\n# version 8\n', digest: 'sha256:v8' };
    const seen: boolean[] = [];
    t.deps.cloudInit = {
      resolve: async (_p, o) => {
        seen.push(o.fresh);
        return o.fresh ? fresh : cached;
      },
      versionState: async () => 'readable',
    };
    await create();
    await t.run('p1', 'requeue');
    expect(seen).toEqual([false, true]);
    const [instance] = [...t.provider.instances.values()];
    expect(instance?.request.startupScript).toBe(fresh.script);
    expect((await t.doc())?.status.providerId).toMatch(/^zones\//);
  });

  it("a delivery's fresh first pass may share a read begun since its publish time; a later pass's forced read may not", async () => {
    const seen: Array<{ fresh: boolean; since?: string }> = [];
    t.deps.cloudInit = {
      resolve: async (_p, o) => {
        seen.push({ fresh: o.fresh, ...(o.since ? { since: o.since.toISOString() } : {}) });
        return script;
      },
      versionState: async () => 'readable',
    };
    await create();
    const publishTime = '2026-03-01T11:59:58.123Z';
    await pushed('secret-rotated', 'm1', publishTime);
    // The first pass (fresh, since the publish time) creates; the create's own forced read is strict.
    expect(seen[0]).toEqual({ fresh: true, since: publishTime });
    expect(seen.slice(1).every((s) => s.since === undefined)).toBe(true);
  });

  it('never replaces a VM on a cached cloud-init older than the one it was built from', async () => {
    await provisionedWith(async (_p, o) => (o.fresh ? version(8) : version(7)));
    // A drift poll on a function instance whose cache still holds version 7: no delete, nothing changes.
    t.clock.advance(iv.DriftPoll);
    await t.run('p1', 'requeue');
    expect(t.provider.callsOf('delete')).toBe(0);
    expect((await t.doc())?.status.phase).toBe('Provisioned');
  });

  // A status write that failed after a create leaves the instance recorded without its hash (specHash '':
  // recordBeforeRetry); the redelivery adopts the hash it resolves. Adopted from a cache older than the one
  // the VM was built from, the next pass took the VM's own label for stale and replaced a VM built right.
  it('adopts a hash only from a fresh cloud-init read, never a cached one older than the VM', async () => {
    await provisionedWith(async (_p, o) => (o.fresh ? version(8) : version(7)));
    const built = (await t.doc())!.status.specHash;
    const stored = (await t.store.get('p1'))!;
    await t.store.writeStatus('p1', { ...stored.proxy.status, specHash: '' }, stored.version);
    await t.run('p1', 'requeue');
    expect((await t.doc())?.status.specHash).toBe(built);
    t.clock.advance(iv.DriftPoll);
    await t.run('p1', 'requeue');
    expect(t.provider.callsOf('delete')).toBe(0);
    expect((await t.doc())?.status.phase).toBe('Provisioned');
  });

  it("a redelivered older rotation's request never replaces on a read it shared: it reads strictly before it acts", async () => {
    // Version 8 came after version 7; this instance's cache holds 7, read after an older rotation's
    // request was published, which Pub/Sub now delivers again. A strict read says 8, as the VM was built.
    await provisionedWith(async (_p, o) => (o.fresh && !o.since ? version(8) : version(7)));
    const publishTime = new Date(t.clock.now().getTime() - 60_000).toISOString();
    await pushed('secret-rotated', 'old', publishTime);
    expect(t.provider.callsOf('delete')).toBe(0);
    expect(t.slots).toMatchObject({ slots: [] });
    expect((await t.doc())?.status.phase).toBe('Provisioned');
  });

  it('a cloud-init secret that cannot be read: CloudInitError with backoff', async () => {
    await create();
    t.setCloudInit({ ok: false, failure: { kind: 'invalid', message: 'not_found: secret ci' } });
    await t.run('p1', 'created');
    const p = (await t.doc())!;
    expect(p.status.conditions[0]?.reason).toBe('CloudInitError');
    expect(p.status.nextReconcileAt).toEqual(new Date(t.clock.now().getTime() + iv.CloudInitRetryMin));
    expect(t.provider.calls).toHaveLength(0);
    // Not a failed pass (it backs off and tries again): counted on its own line, which an alert watches.
    const unresolved = t.log.lines.filter((l) => l.event === 'proxy.cloud_init_error');
    expect(unresolved).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        proxy: 'p1',
        branch: 'cloud-init/error',
        detail: expect.stringContaining('not_found: secret ci'),
      }),
    ]);
    expect(missingContractFields(unresolved[0]!)).toEqual([]);
  });
});

describe('reconcile handler: external, conflicts, poison', () => {
  beforeEach(() => {
    t = setup();
  });

  it('an external proxy gets its ip from the endpoint and no provider call, ever', async () => {
    await create(aProxy({ name: 'p1', spec: externalSpec() }));
    await t.run('p1', 'created');
    await t.run('p1', 'manual');
    expect((await t.doc())!.status).toMatchObject({
      phase: 'Provisioned',
      ip: '203.0.113.7',
      nextReconcileAt: null,
    });
    expect(t.provider.calls).toHaveLength(0);
    expect(t.store.writes).toBe(2);
  });

  it('a lost write race re-runs the pass from a fresh read', async () => {
    await create();
    loseFirstWrite(async (name, fresh) => {
      await t.store.writeStatus(name, { ...fresh.proxy.status, latencyMillis: 1 }, fresh.version);
    });
    const outcome = await t.run('p1', 'created');
    expect(outcome).toEqual({ passes: 2, last: 'written' });
    expect(t.provider.created).toBe(1);
    expect((await t.doc())!.status.phase).toBe('Provisioning');
  });

  // The create's status write lost to a spec edit, and the re-run cannot create (or decide) again — the
  // edit points at a cloud-init secret that cannot be read. Names are deterministic, so the instance is
  // recorded as the proxy's: its passes own it (observed, replaced on the next readable spec, deleted
  // with the proxy) instead of a VM no status names, which the GC keeps because its uid is live.
  it('an instance whose status write lost to a spec edit is recorded by the re-run, whatever it decides', async () => {
    await create();
    loseFirstWrite(async (name, fresh) => {
      await t.store.replaceSpec(name, managedSpec({ machineType: 'e2-small' }), fresh.version);
      t.setCloudInit({ ok: false, failure: { kind: 'invalid', message: 'not_found: secret ci' } });
    });
    expect(await t.run('p1', 'created')).toEqual({ passes: 2, last: 'written' });
    expect(t.provider.instances.size).toBe(1);
    const [providerId, built] = [...t.provider.instances][0]!;
    const p = (await t.doc())!;
    expect(p.status.providerId).toBe(providerId);
    expect(p.status.specHash).toBe(built!.request.specHash); // what the instance was built from
    expect(p.status.conditions[0]?.reason).toBe('CloudInitError');
    expect(t.published).toEqual([]);
    // The proxy's own deletion now takes the instance with it.
    t.provider.bootAll();
    await t.store.requestDeletion('p1', t.clock.now());
    for (let i = 0; i < 4 && (await t.doc()); i++) {
      await t.run('p1', 'delete-requested');
      t.clock.advance(iv.DeletionPoll);
    }
    expect(await t.doc()).toBeNull();
    expect(t.provider.instances.size).toBe(0);
  });

  // The same race with a readable edit: the re-run records the instance with the hash it was built from,
  // and the edited spec replaces it (the instance was still booting: no slot, deleted once it is created).
  it('an instance whose status write lost to a readable spec edit is recorded, then replaced', async () => {
    t.provider.refuseDeletesWhileCreating = true;
    await create();
    loseFirstWrite(async (name, fresh) => {
      await t.store.replaceSpec(name, managedSpec({ machineType: 'e2-medium' }), fresh.version);
    });
    await t.run('p1', 'created');
    const [providerId, old] = [...t.provider.instances][0]!;
    expect(old!.request.machineType).toBe('e2-small'); // built from the spec before the edit
    expect((await t.doc())!.status).toMatchObject({ providerId, specHash: old!.request.specHash });
    t.provider.bootAll();
    for (let i = 0; i < 6 && t.provider.created < 2; i++) {
      t.clock.advance(iv.DeletionPoll);
      await t.run();
    }
    expect(t.provider.callsOf('delete')).toBeGreaterThanOrEqual(1);
    expect(t.provider.created).toBe(2);
    const [now] = [...t.provider.instances.values()];
    expect(now!.request.machineType).toBe('e2-medium');
    expect((await t.doc())!.status).toMatchObject({ providerId, specHash: now!.request.specHash });
  });

  // A concurrent delivery read the edit and built the instance from it; this delivery's create of the old
  // spec got the 409 (same name) and lost its write. Its re-run records the instance by the hash the
  // instance carries, not the one it asked for — which would take the fresh instance for the old one and
  // delete it (the version check cannot tell: the document read names no instance).
  // Also when the re-run cannot read the instance: its hash stays unknown, the spec's is adopted, and the
  // instance's label decides once it is read.
  it.each([
    ['read', null],
    ['not read (quota)', 'quota'],
    ['not read (in passing)', 'transient'],
  ] as const)(
    'a 409 on a create whose write lost does not make the re-run delete an instance built from the edit: %s',
    async (_label, getFails) => {
      await create();
      const edited = managedSpec({ machineType: 'e2-medium' });
      const realCreate = t.provider.create.bind(t.provider);
      let first = true;
      t.provider.create = async (request) => {
        if (first) {
          first = false;
          const fresh = (await t.store.get('p1'))!;
          await t.store.replaceSpec('p1', edited, fresh.version); // read by the other delivery, which creates
          await realCreate({
            ...request,
            machineType: 'e2-medium',
            specHash: specHash(edited as ManagedSpec, script.digest, null),
          });
          if (getFails) t.provider.failNext('get', getFails);
        }
        return realCreate(request); // this delivery's: the 409
      };
      await t.run('p1', 'created');
      t.provider.bootAll();
      for (let i = 0; i < 3; i++) {
        t.clock.advance(iv.QuotaRetry);
        await t.run();
      }
      const [inst] = [...t.provider.instances.values()];
      expect(inst!.request.machineType).toBe('e2-medium');
      expect(t.provider.callsOf('delete')).toBe(0);
      expect((await t.doc())!.status.specHash).toBe(inst!.request.specHash);
    },
  );

  // Recorded only until a write lands: a later pass that finds the instance gone (its creation failed
  // inside the operation) and clears it leaves the next pass free to create again, in the same delivery.
  it('an instance recorded after a lost write and then found gone is created again in the same delivery', async () => {
    await create();
    loseFirstWrite(async (name, fresh) => {
      t.provider.instances.clear(); // gone (deleted out of band), no create failure to tell of
      await t.store.replaceSpec(name, managedSpec({ machineType: 'e2-medium' }), fresh.version);
    });
    await t.run('p1', 'created');
    expect(t.provider.callsOf('create')).toBe(2);
    expect(t.published).toEqual([]);
    const [providerId, inst] = [...t.provider.instances][0]!;
    expect(inst!.request.machineType).toBe('e2-medium');
    expect((await t.doc())!.status.providerId).toBe(providerId);
  });

  // RESOURCE_OPERATION_RATE_EXCEEDED in the insert Operation: a burst of creates from one image. The
  // proxy is created again, but after a pause spread by its uid, not at once in the same delivery.
  it('a create throttled in its Operation is created again after 2–4 ProvisioningPolls, not at once', async () => {
    await create();
    t.provider.failCreatesAsync({ kind: 'transient', message: 'RESOURCE_OPERATION_RATE_EXCEEDED' });
    await t.run('p1', 'created');
    t.clock.advance(iv.ProvisioningPoll);
    await t.run();
    expect(t.provider.callsOf('create')).toBe(1);
    const { status } = (await t.doc())!;
    expect(status.providerId).toBeNull();
    const wait = status.nextReconcileAt!.getTime() - t.clock.now().getTime();
    expect(wait).toBeGreaterThanOrEqual(2 * iv.ProvisioningPoll);
    expect(wait).toBeLessThan(4 * iv.ProvisioningPoll);
    expect(
      t.log.lines.some((l) => l.severity === 'WARNING' && l.branch === 'instance-missing/transient'),
    ).toBe(true);
    t.provider.failCreatesAsync(null);
    t.clock.advance(wait);
    await t.run();
    expect(t.provider.callsOf('create')).toBe(2);
    expect((await t.doc())!.status.phase).toBe('Provisioning');
  });

  // The re-run records the instance and then fails in passing (GCE's read): it writes the instance before
  // it throws, so the redelivery — which knows nothing of it — deletes it with the proxy, not the
  // document alone (leaving the VM to the GC).
  it('a re-run recording the instance that fails in passing writes it first: the redelivery deletes it', async () => {
    await create();
    loseFirstWrite(async (name) => {
      await t.store.requestDeletion(name, t.clock.now());
      t.provider.failNext('get', 'transient');
    });
    await expect(t.run('p1', 'created')).rejects.toThrow(/transient|get/);
    const [providerId] = [...t.provider.instances.keys()];
    expect((await t.doc())!.status).toMatchObject({
      providerId,
      phase: 'Deleting',
      nextReconcileAt: safetyNet(),
    });
    for (let i = 0; i < 4 && (await t.doc()); i++) {
      await t.run('p1', 'delete-requested'); // the redelivery, then the DeletionPoll passes
      t.clock.advance(iv.DeletionPoll);
    }
    expect(await t.doc()).toBeNull();
    expect(t.provider.instances.size).toBe(0);
  });

  // Any other way out by a throw too — a pass failing on the store, the last pass losing its write — or a
  // proxy the winning write latched would keep a VM nothing records (latched: no provider call until a
  // spec edit) and the GC keeps (its uid is live).
  it('a delivery that throws in a pass with the instance unrecorded writes it first: a latch cannot hide it', async () => {
    await create();
    loseFirstWrite(async (name, fresh) => {
      await t.store.replaceSpec(name, managedSpec({ machineType: 'e2-medium' }), fresh.version);
      t.setCloudInit({ ok: false, failure: { kind: 'spec', message: 'cannot render' } });
      const realGet = t.store.get.bind(t.store);
      t.store.get = async () => {
        t.store.get = realGet; // one blip: the re-run's read
        throw new StoreError('unavailable', 'blip');
      };
    });
    await expect(t.run('p1', 'created')).rejects.toThrow(/blip/);
    await t.run('p1', 'spec-changed'); // the redelivery
    await t.run('p1', 'spec-changed');
    const [providerId] = [...t.provider.instances.keys()];
    expect((await t.doc())!.status).toMatchObject({ providerId, phase: 'Failed' });
  });

  it('a pass whose status write throws after its create writes the instance before Pub/Sub retries', async () => {
    // Firestore unavailable for the write that would record the new VM; by the redelivery its cloud-init
    // cannot be read, so nothing creates again (a 409 would have recorded it): the VM ran unrecorded.
    await create();
    const realWrite = t.store.writeStatus.bind(t.store);
    t.store.writeStatus = async () => {
      t.store.writeStatus = realWrite; // one blip: the pass's own write
      t.setCloudInit({ ok: false, failure: { kind: 'spec', message: 'cannot render' } });
      throw new StoreError('unavailable', 'blip');
    };
    await expect(t.run('p1', 'created')).rejects.toThrow(/blip/);
    const [providerId] = [...t.provider.instances.keys()];
    expect(providerId).toBeDefined();
    expect((await t.doc())!.status).toMatchObject({ providerId, nextReconcileAt: safetyNet() });
  });

  it('a delivery whose last pass loses its write writes the instance before it throws', async () => {
    t.deps.maxPasses = 1;
    await create();
    loseFirstWrite(async (name, fresh) => {
      await t.store.replaceSpec(name, managedSpec({ machineType: 'e2-medium' }), fresh.version);
      t.setCloudInit({ ok: false, failure: { kind: 'spec', message: 'cannot render' } });
    });
    await expect(t.run('p1', 'created')).rejects.toThrow(/kept conflicting/);
    const [recorded] = [...t.provider.instances.keys()];
    // Due a minute on: should the redeliveries run out, the requeue sweep finds it (it skips Provisioning
    // with nothing due), but not beside Pub/Sub's first redeliveries.
    expect((await t.doc())!.status).toMatchObject({
      providerId: recorded,
      phase: 'Provisioning',
      nextReconcileAt: safetyNet(),
    });
    await t.run('p1', 'spec-changed');
    const [providerId] = [...t.provider.instances.keys()];
    expect((await t.doc())!.status.providerId).toBe(providerId);
  });

  // P deleted and created again under its name while pass 1 created P's VM: pass 1's write finds another
  // proxy (a conflict), and pass 2 reads it. Only a delivery ending as usual deleted the first VM; one that
  // threw, hit its conflict bound or handed off left it to the GC (10–20 minutes of a VM billing).
  // Explicit uids: testUid()'s share their first 20 hex digits, so they would name the same instance.
  it.each([
    ['its writes keep conflicting', 'conflict'],
    ['a pass throws (Compute 503)', 'throw'],
    ['it hands off after the pass bound', 'hand-off'],
  ] as const)(
    'an instance made for an earlier incarnation is deleted when the delivery ends because %s',
    async (_why, exit) => {
      t.deps.maxPasses = 2;
      const first = aProxy({ name: 'p1', uid: '11111111-1111-4111-8111-111111111111' });
      const again = aProxy({
        name: 'p1',
        uid: '22222222-2222-4222-8222-222222222222',
        // The hand-off: it records an instance that is gone (instance-missing, RequeueNow).
        ...(exit === 'hand-off' ? { status: { providerId: 'zones/us-central1-a/instances/pp-gone' } } : {}),
      });
      await create(first);
      loseFirstWrite(async (name, fresh) => {
        await t.store.deleteDocument(name, fresh.version);
        await t.store.create(again);
        if (exit === 'throw') t.provider.failNext('create', 'transient');
        if (exit === 'conflict') {
          loseFirstWrite(async (n, f) => {
            await t.store.writeStatus(n, { ...f.proxy.status, latencyMillis: 1 }, f.version);
          });
        }
      });
      const delivery = t.run('p1', 'created');
      if (exit === 'hand-off') await expect(delivery).resolves.toEqual({ passes: 2, last: 'written' });
      else await expect(delivery).rejects.toThrow(exit === 'throw' ? /transient|create/ : /kept conflicting/);
      const firstVm = `zones/us-central1-a/instances/${instanceNameFromUid(first.uid)}`;
      expect(t.provider.calls).toContainEqual({ op: 'create', providerId: firstVm });
      expect(t.provider.calls).toContainEqual({ op: 'delete', providerId: firstVm });
      expect(t.log.lines).toContainEqual(
        expect.objectContaining({ event: 'reconcile.unrecorded_instance_deleted', uid: first.uid }),
      );
      // The proxy now under the name keeps its own: nothing of it was deleted.
      const deleted = t.provider.calls.filter((c) => c.op === 'delete').map((c) => c.providerId);
      expect(deleted).toEqual([firstVm]);
    },
  );

  // PASS_START_BUDGET_MS is sized so that a pass begun at its end still ends inside the 300 s timeout; a
  // delete at the delivery's end after it (up to ~2 minutes of retries, just when Compute is slow) ran into
  // the timeout, losing the logs and the hand-off. Past the budget the delete goes to a request of its own.
  it.each([
    ['its writes keep conflicting', 'conflict'],
    ['a pass throws (Compute 503)', 'throw'],
  ] as const)(
    'past its time budget, a delivery that ends because %s hands the earlier incarnation’s instance to a request',
    async (_why, exit) => {
      const first = aProxy({ name: 'p1', uid: '11111111-1111-4111-8111-111111111111' });
      const again = aProxy({ name: 'p1', uid: '22222222-2222-4222-8222-222222222222' });
      await create(first);
      const realCreate = t.provider.create.bind(t.provider);
      loseFirstWrite(async (name, fresh) => {
        await t.store.deleteDocument(name, fresh.version);
        await t.store.create(again);
        if (exit === 'conflict')
          t.clock.advance(PASS_START_BUDGET_MS); // no pass 2: the conflict exit
        else {
          t.provider.create = async () => {
            t.clock.advance(PASS_START_BUDGET_MS); // pass 2's create: slow, then a 503
            throw new ProviderError('transient', '503 from Compute');
          };
        }
      });
      const delivery = t.run('p1', 'created');
      await expect(delivery).rejects.toThrow(exit === 'throw' ? /503/ : /kept conflicting/);
      t.provider.create = realCreate;
      const firstVm = `zones/us-central1-a/instances/${instanceNameFromUid(first.uid)}`;
      expect(t.provider.calls.filter((c) => c.op === 'delete')).toEqual([]);
      const handedOff = { provider: 'gce', providerId: firstVm, uid: first.uid };
      expect(t.published).toEqual([{ proxy: 'p1', reason: 'unrecorded-instance', instance: handedOff }]);
      expect(t.log.lines).toContainEqual(
        expect.objectContaining({ event: 'reconcile.unrecorded_instance_handed_off', providerId: firstVm }),
      );
      // The request's delivery deletes it (no document owns it).
      await handleReconcile(t.deps, t.published[0]!);
      expect(t.provider.calls.filter((c) => c.op === 'delete')).toEqual([
        { op: 'delete', providerId: firstVm },
      ]);
    },
  );

  // The uid alone does not say an instance is superseded: a document that records it owns it, whatever uid it
  // now holds. Pass 1 creates U's VM and loses its write to a concurrent delivery that recorded the same VM
  // (its insert met a 409); a console edit then changes the uid to V, status kept. Pass 2 reads V with the VM
  // recorded — reconcile keeps serving on it — and the delivery's end deleted the live proxy's VM.
  it('never drops an instance a document records, though the uid it holds now is another (a console edit)', async () => {
    const first = aProxy({ name: 'p1', uid: '11111111-1111-4111-8111-111111111111' });
    const edited = '22222222-2222-4222-8222-222222222222';
    const vm = `zones/us-central1-a/instances/${instanceNameFromUid(first.uid)}`;
    await create(first);
    loseFirstWrite(async (name, fresh) => {
      await t.store.writeStatus(name, { ...fresh.proxy.status, providerId: vm, specHash: '' }, fresh.version);
      const recorded = (await t.store.get(name))!;
      await t.store.deleteDocument(name, recorded.version);
      await t.store.create({ ...recorded.proxy, uid: edited });
    });
    // Pass 2 adopts the VM (its hash unknown: RequeueNow), pass 3 finds it booting: the delivery ends.
    await expect(t.run('p1', 'created')).resolves.toEqual({ passes: 3, last: 'written' });
    expect(t.provider.calls).toContainEqual({ op: 'create', providerId: vm });
    expect((await t.doc())!).toMatchObject({ uid: edited, status: { providerId: vm } });
    expect(t.provider.calls.filter((c) => c.op === 'delete')).toEqual([]);
    expect(t.published).toEqual([]);
  });

  it('a missing document is done', async () => {
    await expect(t.run('nope')).resolves.toEqual({ passes: 1, last: 'not-found' });
  });

  it('acks and logs a malformed message instead of throwing', async () => {
    const data = Buffer.from(JSON.stringify({ proxy: 'Not A Name', reason: 'created' })).toString('base64');
    await expect(
      onReconcileEvent(t.deps, { data: { message: { data, messageId: 'm1' } } }),
    ).resolves.toBeUndefined();
    expect(t.log.lines.at(-1)).toMatchObject({
      severity: 'ERROR',
      error: 'schema',
      messageId: 'm1',
      // Which field to mend in a hand-published replay — named, its value not quoted.
      issues: [expect.stringMatching(/^proxy: /)],
    });
    expect(JSON.stringify(t.log.lines.at(-1))).not.toContain('Not A Name');
  });

  it('a reason it does not know (a newer publisher, mid-rollout) runs a fresh pass instead of being dropped', async () => {
    await create();
    await pushed('rebalanced', 'm1');
    expect(t.provider.created).toBe(1);
    expect((await t.doc())!.status.phase).toBe('Provisioning');
    expect(t.log.lines).toContainEqual(
      expect.objectContaining({ severity: 'WARNING', reason: 'rebalanced', proxy: 'p1' }),
    );
    t.provider.bootAll();
    await t.run();
    // A steady proxy: only the reason decides whether the pass may use a cached cloud-init.
    const reads: boolean[] = [];
    const resolve = t.deps.cloudInit.resolve;
    t.deps.cloudInit = {
      ...t.deps.cloudInit,
      resolve: (p, o) => {
        reads.push(o.fresh);
        return resolve(p, o);
      },
    };
    await pushed('requeue', 'm2');
    await pushed('rebalanced', 'm3');
    expect(reads).toEqual([false, true]);
    expect(t.log.lines.filter((l) => l.severity === 'ERROR')).toEqual([]);
  });

  it('a field it does not know (a newer publisher, mid-rollout) is dropped and named once, and the pass runs', async () => {
    await create();
    const payload = { proxy: 'p1', reason: 'created', origin: 'api-v9', traceparent: 'secret-ish' };
    const data = Buffer.from(JSON.stringify(payload)).toString('base64');
    await onReconcileEvent(t.deps, { data: { message: { data, messageId: 'm1' } } });
    expect(t.provider.created).toBe(1);
    expect((await t.doc())!.status.phase).toBe('Provisioning');
    const warned = t.log.lines.filter((l) => l.event === 'pubsub.unknown_fields');
    expect(warned).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        proxy: 'p1',
        topic: 'reconcile-requests',
        fields: ['origin', 'traceparent'],
        messageId: 'm1',
      }),
    ]);
    expect(JSON.stringify(t.log.lines)).not.toContain('secret-ish');
    expect(t.log.lines.filter((l) => l.severity === 'ERROR')).toEqual([]);
  });

  it('logs one JSON line per pass with severity, proxy, branch and phase', async () => {
    await create();
    await t.run('p1', 'created');
    expect(t.log.lines.at(-1)).toMatchObject({
      severity: 'INFO',
      message: 'reconcile pass',
      proxy: 'p1',
      branch: 'create',
      action: 'create',
      phase: 'Provisioning',
      result: 'written',
    });
  });
});

/** The probe's verdict as it would be about whichever instance the stored status describes: healthy. */
const healthyOnceRunning: HealthSource = {
  verdictFor: async (proxy) => {
    const instance = healthInstanceKey(proxy);
    if (instance === '') return null;
    const verdict = {
      healthy: true,
      latencyMillis: 5,
      checkedAt: null,
      reason: 'ProbeSucceeded',
      message: 'ok',
      unreachableRoutes: [],
    };
    return { instance, verdict };
  },
};

describe('reconcile handler: replacements paced by RECONCILE_MAX_REPLACING', () => {
  // The default cloud-init's render changed (an upgrade): the same port and credentials, so the old
  // instances keep serving what clients are handed while they wait. A rotation waits too, while the
  // version the old instances serve stays readable (managed.ts keepsAccess).
  const V7 = 'projects/p/secrets/c/versions/7';
  const booted = { ...script, credentialsSecret: V7 };
  const rotatedScript = { ...booted, digest: 'sha256:upgraded' };
  const names = ['p1', 'p2', 'p3'];

  beforeEach(async () => {
    t = setup(1);
    t.setCloudInit(booted);
    for (const name of names) {
      await create(aProxy({ name, uid: `${name.slice(1)}0000000-0000-4000-8000-000000000000` }));
      await t.run(name, 'created');
    }
    t.provider.bootAll();
    for (const name of names) await t.run(name);
  });

  /** The rotation notified to every proxy, then p1 (holding the one slot) replaced until its new VM runs. */
  async function rotateUntilP1Runs(): Promise<void> {
    t.setCloudInit(rotatedScript);
    for (const name of names) await t.run(name, 'secret-rotated');
    for (let i = 0; i < 4; i++) {
      t.clock.advance(iv.ProvisioningPoll);
      t.provider.bootAll();
      await t.run('p1');
    }
    expect((await t.doc('p1'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.Created);
  }

  it('one at a time: the others keep serving, Ready-able and queued, and proceed once the slot frees', async () => {
    t.setCloudInit(rotatedScript);
    for (const name of names) await t.run(name, 'secret-rotated');
    expect(t.provider.callsOf('delete')).toBe(1);
    expect(t.slots).toMatchObject({ slots: [{ proxy: 'p1' }] });
    for (const name of ['p2', 'p3']) {
      const p = (await t.doc(name))!;
      expect(p.status).toMatchObject({ phase: 'Provisioned', ip: expect.any(String) });
      expect(p.status.conditions[0]).toMatchObject({
        status: 'True',
        reason: ProvisionedReason.ReplacementQueued,
      });
      expect(p.status.nextReconcileAt).toEqual(new Date(t.clock.now().getTime() + iv.ReplacementRetry));
    }
    // A duplicate delivery for the holder takes no second slot and deletes nothing more.
    await t.run('p1', 'secret-rotated');
    expect(t.slots).toMatchObject({ slots: [{ proxy: 'p1' }] });

    // The probe finds every instance healthy once it runs: a replacement ends (its slot freed) with that.
    t.deps.health = healthyOnceRunning;
    const replaced = new Set<string>();
    for (let round = 0; round < 30 && replaced.size < names.length; round++) {
      t.clock.advance(iv.ReplacementRetry);
      t.provider.bootAll();
      for (const name of names) {
        await t.run(name);
        const p = (await t.doc(name))!;
        if (p.status.phase === 'Ready' && p.status.conditions[0]?.reason === 'Created') replaced.add(name);
      }
      expect((t.slots as InMemoryReplacementSlots).slots.length).toBeLessThanOrEqual(1);
    }
    expect([...replaced].sort()).toEqual(names);
    // Each replaced exactly once (a delete is re-issued while the old instance is still going).
    expect(t.provider.created).toBe(6);
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
  });

  it('a new instance that boots but never proves healthy keeps its slot: the roll stops there until the slot goes stale', async () => {
    // p1's new VM boots and runs; the probe never finds it healthy (noHealth: no verdict at all).
    await rotateUntilP1Runs();
    t.clock.advance(iv.ReplacementRetry);
    await t.run('p2');
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p1' }]);
    // A slot held that long is reclaimed (REPLACEMENT_SLOT_STALE_MS): a bad change moves on, slowly.
    t.clock.advance(15 * 60_000);
    await t.run('p2');
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p2' }]);
  });

  it('a stale cache taking the new VM for an old one does not free the slot its replacement holds', async () => {
    // p1's new VM runs, not yet found healthy: its replacement still holds the one slot.
    await rotateUntilP1Runs();
    // A drift poll (or the probe's transition) lands on a function instance whose cache predates the
    // change: the cached plan "replaces" the new VM and takes the slot p1 already holds; the fresh read
    // then finds nothing to replace.
    t.deps.cloudInit = {
      resolve: async (_p, { fresh }) => (fresh ? rotatedScript : booted),
      versionState: async () => 'readable',
    };
    const deletes = t.provider.callsOf('delete');
    await t.run('p1');
    expect(t.provider.callsOf('delete')).toBe(deletes);
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p1' }]);
    // So the roll still stops at the cap until p1's new VM proves healthy — and that frees it: the stale
    // take recorded nothing about the new VM (only a delete made does).
    t.clock.advance(iv.ReplacementRetry);
    await t.run('p2');
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
    t.deps.health = healthyOnceRunning;
    await t.run('p1');
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
  });

  it('a proxy deleted mid-replacement frees its slot, though its status still names the old VM', async () => {
    // p1's replacement takes the slot and deletes the old VM, but Firestore refuses its status writes
    // (the delivery fails, to be redelivered): the status still shows the old VM provisioned — the
    // instance the slot replaces. Meanwhile the proxy is deleted, and its VM is gone.
    t.setCloudInit(rotatedScript);
    const write = t.store.writeStatus.bind(t.store);
    t.store.writeStatus = async () => {
      throw new Error('firestore unavailable');
    };
    await expect(t.run('p1', 'secret-rotated')).rejects.toThrow();
    t.store.writeStatus = write;
    expect(t.provider.callsOf('delete')).toBe(1);
    expect((await t.doc('p1'))!.status.conditions[0]).toMatchObject({ status: 'True' });
    await t.store.requestDeletion('p1', t.clock.now());
    t.provider.instances.clear();
    // The deletion's pass finds no VM and deletes the document, and with it goes the slot.
    await t.run('p1');
    expect(await t.doc('p1')).toBeNull();
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
  });

  /**
   * A health source whose first read waits until `open()` (a slow read), so another delivery of the proxy
   * runs to its end meanwhile and reads no verdict; from `open()` on, healthyOnceRunning.
   */
  function heldHealth(): { open: () => void } {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let first = true;
    let opened = false;
    t.deps.health = {
      verdictFor: async (proxy) => {
        if (first) {
          first = false;
          await gate;
        } else if (!opened) return null;
        return healthyOnceRunning.verdictFor(proxy);
      },
    };
    return {
      open: () => {
        opened = true;
        release();
      },
    };
  }

  it('a verdict about the old VM, read while a rotation replaces it, does not free the replacement’s slot', async () => {
    // The probe finds p1's old VM healthy: its transition's delivery (A, on a function instance whose cache
    // still holds the old render, so nothing to replace) reads that verdict slowly. Meanwhile the rotation's
    // delivery (C, fresh) takes the one slot and deletes that very VM.
    t.deps.cloudInit = {
      resolve: async (_p, { fresh }) => (fresh ? rotatedScript : booted),
      versionState: async () => 'readable',
    };
    const held = heldHealth();
    const a = t.run('p1', 'health-transition');
    await new Promise((r) => setTimeout(r, 10));
    await t.run('p1', 'secret-rotated');
    expect(t.provider.callsOf('delete')).toBe(1);
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p1' }]);
    held.open();
    await a;
    // A's verdict was about the instance the slot replaces: the slot stays the replacement's, and p2
    // waits its turn.
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p1' }]);
    await t.run('p2', 'secret-rotated');
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p1' }]);
  });

  it('a replacement right after a replacement keeps the slot when the first one’s new VM proves healthy meanwhile', async () => {
    // p1's first replacement (R1) has its new VM running, not yet proven. A delivery (A) reads that VM's
    // verdict slowly while a second change (R2) replaces that VM on the slot p1 already holds.
    await rotateUntilP1Runs();
    const held = heldHealth();
    const a = t.run('p1', 'health-transition');
    await new Promise((r) => setTimeout(r, 10));
    const deletes = t.provider.callsOf('delete');
    const secondChange = { ...rotatedScript, digest: 'sha256:upgraded-again' };
    t.setCloudInit(secondChange);
    await t.run('p1', 'secret-rotated');
    expect(t.provider.callsOf('delete')).toBe(deletes + 1);
    held.open();
    await a;
    // The verdict was about the VM R2 replaces: the slot is R2's.
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p1' }]);
    t.clock.advance(iv.ReplacementRetry);
    await t.run('p2');
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
    // R2's own new VM proving healthy frees it, and the roll goes on.
    t.deps.health = healthyOnceRunning;
    for (let i = 0; i < 6 && (t.slots as InMemoryReplacementSlots).slots.length > 0; i++) {
      t.clock.advance(iv.ProvisioningPoll);
      t.provider.bootAll();
      await t.run('p1');
    }
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
  });

  it('a second change’s delete GCE refuses records nothing on the held slot: the first replacement’s VM still frees it', async () => {
    await rotateUntilP1Runs();
    // The second change's delete is refused outright (a 403): nothing is being replaced.
    const del = t.provider.delete.bind(t.provider);
    t.provider.delete = async () => {
      t.provider.delete = del;
      throw new ProviderError('transient', 'instances.delete failed: HTTP 403 forbidden', { status: 403 });
    };
    t.setCloudInit({ ...rotatedScript, digest: 'sha256:upgraded-again' });
    await t.run('p1', 'secret-rotated').catch(() => {});
    // The change is reverted; the first replacement's VM proves healthy and frees the slot.
    t.setCloudInit(rotatedScript);
    t.deps.health = healthyOnceRunning;
    t.clock.advance(iv.ReplacementRetry);
    await t.run('p1');
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
  });

  it('a slot freed during a held slot’s delete is not taken again: that replacement runs uncounted, logged', async () => {
    await rotateUntilP1Runs();
    // While the second change's delete call runs, a verdict about the first replacement's VM frees the slot.
    const p1 = (await t.doc('p1'))!;
    const del = t.provider.delete.bind(t.provider);
    t.provider.delete = async (id) => {
      t.provider.delete = del;
      await t.slots.release({ proxy: 'p1', uid: p1.uid }, healthInstanceKey(p1));
      return del(id);
    };
    t.setCloudInit({ ...rotatedScript, digest: 'sha256:upgraded-again' });
    await t.run('p1', 'secret-rotated');
    expect(t.provider.callsOf('delete')).toBeGreaterThan(0);
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
    expect(t.log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'WARNING',
        message: 'replacement slot not marked for the instance this delete replaces',
        proxy: 'p1',
      }),
    );
  });

  it('a queued proxy’s retries read the cloud-init fresh: a stale cache on another instance cannot hide the change', async () => {
    // This function instance's cache still holds the old version; only a fresh read sees the new one.
    t.deps.cloudInit = {
      resolve: async (_p, { fresh }) => (fresh ? rotatedScript : booted),
      versionState: async () => 'readable',
    };
    await t.run('p1', 'secret-rotated');
    await t.run('p2', 'secret-rotated');
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
    await t.slots.release({ proxy: 'p1', uid: (await t.doc('p1'))!.uid });
    t.clock.advance(iv.ReplacementRetry);
    await t.run('p2'); // a plain requeue, as the sweep sends it
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p2' }]);
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.Replacing);
  });

  it('a rotation waits its turn too: the others keep serving version 7 and say so (status.servedCredentials)', async () => {
    const asked: string[] = [];
    t.deps.cloudInit = {
      resolve: async () => ({ ...booted, credentialsSecret: 'projects/p/secrets/c/versions/8' }),
      versionState: async (ref) => {
        asked.push(`${ref.secret}@${ref.version}`);
        return 'readable';
      },
    };
    for (const name of names) await t.run(name, 'secret-rotated');
    expect(t.provider.callsOf('delete')).toBe(1);
    expect(new Set(asked)).toEqual(new Set(['c@7']));
    for (const name of ['p2', 'p3']) {
      const p = (await t.doc(name))!;
      expect(p.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
      expect(p.status.servedCredentials).toEqual({ secret: 'c', version: '7' });
    }
    // The one being replaced serves nothing now: clients fall back to the spec's reference.
    expect((await t.doc('p1'))!.status.servedCredentials).toBeUndefined();
  });

  it('a queued proxy’s retry refused a slot reads nothing fresh: a fleet waiting out a rotation costs no reads per proxy', async () => {
    const reads = { fresh: 0, cached: 0, statesFresh: 0, statesCached: 0 };
    const v8 = { ...booted, credentialsSecret: 'projects/p/secrets/c/versions/8' };
    t.deps.cloudInit = {
      resolve: async (_p, { fresh }) => {
        reads[fresh ? 'fresh' : 'cached']++;
        return v8;
      },
      versionState: async (_ref, { fresh }) => {
        reads[fresh ? 'statesFresh' : 'statesCached']++;
        return 'readable';
      },
    };
    for (const name of names) await t.run(name, 'secret-rotated');
    expect((await t.doc('p3'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
    Object.assign(reads, { fresh: 0, cached: 0, statesFresh: 0, statesCached: 0 });
    t.clock.advance(iv.ReplacementRetry);
    await t.run('p2'); // plain requeues, as the sweep sends them; p1 still holds the one slot
    await t.run('p3');
    expect(reads).toEqual({ fresh: 0, cached: 2, statesFresh: 0, statesCached: 2 });
    for (const name of ['p2', 'p3'])
      expect((await t.doc(name))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
  });

  it('a slot taken on a cached plan that a fresh read does not delete with is given back', async () => {
    // p1 is queued behind p2; this instance's cache still shows the change, which was since reverted.
    t.setCloudInit(rotatedScript);
    await t.run('p2', 'secret-rotated');
    await t.run('p1', 'secret-rotated');
    expect((await t.doc('p1'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
    await t.slots.release({ proxy: 'p2', uid: (await t.doc('p2'))!.uid });
    t.deps.cloudInit = {
      resolve: async (_p, { fresh }) => (fresh ? booted : rotatedScript),
      versionState: async () => 'readable',
    };
    t.clock.advance(iv.ReplacementRetry);
    const deletes = t.provider.callsOf('delete');
    await t.run('p1');
    expect(t.provider.callsOf('delete')).toBe(deletes);
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
    expect((await t.doc('p1'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.Created);
  });

  it('a slot taken for a delete that the version check stops is given back: the re-run decides afresh', async () => {
    // p1 takes the slot for its replacement; before its delete, another writer moves the document and
    // the change is reverted (the rotation rolled back), so the re-run keeps the VM it has.
    afterFirstTake(async () => {
      t.setCloudInit(booted);
      const current = (await t.store.get('p1'))!;
      // Another writer (a probe's health, say): the status as it is, at a new version.
      expect(await t.store.writeStatus('p1', current.proxy.status, current.version)).toBe('written');
    });
    t.setCloudInit(rotatedScript);
    await t.run('p1', 'secret-rotated');
    expect(t.provider.callsOf('delete')).toBe(0);
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
    expect((await t.doc('p1'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.Created);
    // So the next proxy to replace is not held up by a slot nobody uses.
    t.setCloudInit(rotatedScript);
    await t.run('p2', 'secret-rotated');
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p2' }]);
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.Replacing);
  });

  it('a slot taken for a delete the provider refused outright is given back: a revert then frees the fleet', async () => {
    t.setCloudInit(rotatedScript);
    // A grant not yet propagated: GCE answers 403 and does nothing.
    const real = t.provider.delete.bind(t.provider);
    t.provider.delete = async () => {
      t.provider.delete = real;
      throw new ProviderError('transient', 'compute.instances.delete denied', { status: 403 });
    };
    await expect(t.run('p1', 'secret-rotated')).rejects.toThrow();
    // Nothing is replacing, so the slot is free for whoever replaces first.
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
    // The rotation rolled back before the redelivery: p1 keeps its VM, and p2 is not held up.
    t.setCloudInit(booted);
    await t.run('p1', 'secret-rotated');
    expect(t.provider.callsOf('delete')).toBe(0);
    expect((await t.doc('p1'))!.status.phase).toBe('Provisioned');
    t.setCloudInit(rotatedScript);
    await t.run('p2', 'secret-rotated');
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p2' }]);
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.Replacing);
  });

  it.each([
    ['no answer (a timed-out attempt that may still land)', undefined],
    ['a 5xx', 503],
    ['a rate limit', 429],
  ])('a slot taken for a delete that failed with %s stays: the VM may be going', async (_what, status) => {
    t.setCloudInit(rotatedScript);
    // Nothing seen to happen yet — the VM still reads RUNNING — but GCE may act on it a moment later.
    const real = t.provider.delete.bind(t.provider);
    t.provider.delete = async () => {
      t.provider.delete = real;
      throw new ProviderError('transient', 'instances.delete failed', status ? { status } : undefined);
    };
    await expect(t.run('p1', 'secret-rotated')).rejects.toThrow();
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p1' }]);
    await t.run('p2', 'secret-rotated');
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
  });

  it('a slot taken for a delete a concurrent delivery made first stays: that replacement runs on it', async () => {
    // A takes the slot; before its version check, B (another request for p1, its take finding the slot
    // held) deletes the VM and writes Replacing. A's check conflicts: the slot is B's replacement's.
    afterFirstTake(async () => {
      await t.run('p1', 'secret-rotated'); // B, whole
      expect(t.provider.callsOf('delete')).toBe(1);
    });
    t.setCloudInit(rotatedScript);
    await t.run('p1', 'secret-rotated'); // A: its re-run finds the VM B is deleting
    expect((await t.doc('p1'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.Replacing);
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p1' }]);
    // So p2 waits its turn: one replacement at a time (RECONCILE_MAX_REPLACING = 1).
    await t.run('p2', 'secret-rotated');
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
  });

  it('a proxy in CloudInitError reads fresh: a cache from before the newest version was disabled cannot flip it back', async () => {
    const v8 = { ...booted, credentialsSecret: 'projects/p/secrets/c/versions/8' };
    const disabled = {
      ok: false as const,
      failure: { kind: 'invalid' as const, message: 'failed_precondition: 8 is DISABLED' },
    };
    // This instance's cache still holds version 8 as readable; Secret Manager says it is disabled now.
    t.deps.cloudInit = {
      resolve: async (_p, { fresh }) => (fresh ? disabled : v8),
      versionState: async () => 'readable',
    };
    await t.slots.take({ proxy: 'elsewhere', uid: 'u' }); // the one slot is held elsewhere
    await t.run('p1', 'secret-rotated');
    const kept = (await t.doc('p1'))!;
    expect(kept.status.conditions[0]).toMatchObject({
      status: 'True',
      reason: ProvisionedReason.CloudInitError,
    });
    expect(kept.status.servedCredentials).toEqual({ secret: 'c', version: '7' });
    t.clock.advance(iv.ReplacementRetry);
    await t.run('p1'); // a plain requeue, as a retry scheduled before the disable would arrive
    expect((await t.doc('p1'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.CloudInitError);
    expect(t.provider.callsOf('delete')).toBe(0);
  });

  it('a revoked version (disabled, destroyed) is not paced: every proxy is replaced at once, no slot taken', async () => {
    t.deps.cloudInit = {
      resolve: async () => ({ ...booted, credentialsSecret: 'projects/p/secrets/c/versions/8' }),
      versionState: async () => 'revoked',
    };
    for (const name of names) await t.run(name, 'secret-rotated');
    expect(t.provider.callsOf('delete')).toBe(3);
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
    for (const name of names)
      expect((await t.doc(name))!.status.conditions[0]?.reason).toBe(ProvisionedReason.Replacing);
  });

  it('a deleted holder frees its slot for the next proxy', async () => {
    t.setCloudInit(rotatedScript);
    await t.run('p1', 'secret-rotated');
    await t.run('p2', 'secret-rotated');
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.ReplacementQueued);
    await t.store.requestDeletion('p1', t.clock.now());
    for (let i = 0; i < 4 && (await t.doc('p1')); i++) {
      t.clock.advance(iv.DeletionPoll);
      await t.run('p1');
    }
    expect(await t.doc('p1')).toBeNull();
    expect((t.slots as InMemoryReplacementSlots).slots).toEqual([]);
    t.clock.advance(iv.ReplacementRetry);
    await t.run('p2');
    expect((t.slots as InMemoryReplacementSlots).slots).toMatchObject([{ proxy: 'p2' }]);
    expect((await t.doc('p2'))!.status.conditions[0]?.reason).toBe(ProvisionedReason.Replacing);
  });
});
