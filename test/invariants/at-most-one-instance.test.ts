// Brief invariant 1: at most one instance exists per proxy UID, whatever the duplicate or concurrent
// deliveries — and no status update is lost on the way (every write is conditional; a stale pass re-runs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleReconcile } from '../../functions/reconcile/src/handler.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { peakInstances } from '../support/instance-events.js';
import { type ReconcilePlane, startReconcilePlane } from './reconcile-plane.js';

const DELIVERIES = 20;
let plane: ReconcilePlane;

beforeAll(async () => {
  plane = await startReconcilePlane({ bootDelayMs: 1_000 });
});
afterAll(() => plane?.stop());

const deliverConcurrently = (name: string, reason: 'created' | 'requeue' | 'spec-changed') =>
  Promise.allSettled(
    Array.from({ length: DELIVERIES }, () => handleReconcile(plane.deps, { proxy: name, reason })),
  );
const instancesOf = (uid: string) =>
  plane.compute.admin
    .instances({ project: plane.projectId })
    .filter((i) => i.labels['proxyplane-uid'] === uid);
const stored = async (name: string) => (await plane.store.get(name))!.proxy;

/** A pass run after the burst has nothing left to change: the stored status is the converged one. */
async function expectConverged(name: string) {
  const outcome = await handleReconcile(plane.deps, { proxy: name, reason: 'manual' });
  expect(['unchanged', 'written']).toContain(outcome.last);
  if (outcome.last === 'written') {
    // Only a move forward in time (a due time) may remain; re-check it settles.
    expect((await handleReconcile(plane.deps, { proxy: name, reason: 'manual' })).last).not.toBe('conflict');
  }
}

describe(`${DELIVERIES} duplicate, concurrent deliveries of one request`, () => {
  it('create: exactly one instance, the status records it', async () => {
    const proxy = aProxy({ name: 'dup-1', spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }) });
    await plane.store.create(proxy);
    const results = await deliverConcurrently('dup-1', 'created');
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    const insts = instancesOf(proxy.uid);
    expect(insts).toHaveLength(1);
    expect(peakInstances(plane.instanceEvents, proxy.uid)).toBe(1);
    const p = await stored('dup-1');
    expect(p.status.providerId).toBe(`zones/us-central1-a/instances/${insts[0]?.name}`);
    // The burst's conflict re-runs may already have seen the instance boot.
    expect(['Provisioning', 'Provisioned']).toContain(p.status.phase);
    // Losing writers saw a conflict (no write overwrote the winner blindly) and each re-ran: every pass
    // that lost its write was followed by another in its delivery (none was rejected, above), so the
    // deliveries ran at least one pass each plus one per conflict.
    const writes = plane.counting.writes.filter((w) => w.op === 'writeStatus' && w.name === 'dup-1');
    const conflicts = writes.filter((w) => w.outcome === 'conflict').length;
    expect(writes.filter((w) => w.outcome === 'written').length).toBeGreaterThan(0);
    expect(conflicts).toBeGreaterThan(0);
    const passes = results.reduce((n, r) => n + (r.status === 'fulfilled' ? r.value.passes : 0), 0);
    expect(passes).toBeGreaterThanOrEqual(DELIVERIES + conflicts);
    for (const r of results) if (r.status === 'fulfilled') expect(r.value.last).not.toBe('conflict');
  });

  it('boot: duplicates never regress Provisioned, and the instance stays unique', async () => {
    const uid = (await stored('dup-1')).uid;
    await new Promise((r) => setTimeout(r, 1_500));
    const results = await deliverConcurrently('dup-1', 'requeue');
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    const p = await stored('dup-1');
    expect(p.status.phase).toBe('Provisioned');
    expect(p.status.ip).toBe(instancesOf(uid)[0]?.address);
    expect(instancesOf(uid)).toHaveLength(1);
    expect(peakInstances(plane.instanceEvents, uid)).toBe(1);
    await expectConverged('dup-1');
  });

  it('a spec edit racing the duplicates: never two instances, ends on one instance of the new spec', async () => {
    const before = await stored('dup-1');
    const inserts = () =>
      plane.instanceEvents.filter((e) => e.kind === 'inserted' && e.labels['proxyplane-uid'] === before.uid)
        .length;
    const insertsBefore = inserts();
    const v = (await plane.store.get('dup-1'))!.version;
    const edit = plane.store.replaceSpec(
      'dup-1',
      managedSpec({ cloudInit: { inline: '#!/bin/sh\n' }, machineType: 'e2-medium' }),
      v,
    );
    const racing = deliverConcurrently('dup-1', 'requeue');
    expect(await edit).toBe('written');
    // The API publishes spec-changed after its write; Pub/Sub may deliver it many times at once.
    await Promise.all([racing, deliverConcurrently('dup-1', 'spec-changed')]);
    // Drive the replacement to its end the way the requeue sweep would.
    for (let i = 0; i < 60 && (await stored('dup-1')).status.phase !== 'Provisioned'; i++) {
      await new Promise((r) => setTimeout(r, 300));
      await Promise.allSettled(
        [1, 2, 3].map(() => handleReconcile(plane.deps, { proxy: 'dup-1', reason: 'requeue' })),
      );
    }
    // Every insert and delete the emulator made, replayed in order: never two at once (a sampler could
    // miss a short overlap), and the replacement really happened (one more insert).
    expect(peakInstances(plane.instanceEvents, before.uid)).toBe(1);
    expect(inserts()).toBe(insertsBefore + 1);
    const after = await stored('dup-1');
    expect(after.status.phase).toBe('Provisioned');
    expect(after.status.specHash).not.toBe(before.status.specHash);
    const [inst] = instancesOf(before.uid);
    expect(inst?.labels['proxyplane-spec-hash']).toBe(after.status.specHash);
    await expectConverged('dup-1');
  });
});
