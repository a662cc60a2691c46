// A reconcile pass must never delete an instance on the strength of a document it read before another
// pass replaced that instance. Pub/Sub delivers concurrently, and instance names are a pure function of
// the UID (instance-name.ts), so the replacement has the same providerId as the instance it replaced: a
// slow pass holding the old status (or the old spec) observes the NEW instance under the old providerId,
// finds its spec-hash label "wrong" and — without a check — deletes the freshly built VM, a needless
// outage and a second boot. Here the slow pass is held between its document read and its instance get
// (the window a GC pause, a cold Secret Manager read or a slow Firestore answer opens), while a normal
// delivery completes the replacement; then the slow pass is let go against the real emulators.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReconcileDeps } from '../../functions/reconcile/src/handler.js';
import { handleReconcile } from '../../functions/reconcile/src/handler.js';
import { runPass } from '../../functions/reconcile/src/pass.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import type { Provider } from '../../shared/src/ports/provider.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { type ReconcilePlane, startReconcilePlane } from './reconcile-plane.js';

let plane: ReconcilePlane;

beforeAll(async () => {
  plane = await startReconcilePlane({ bootDelayMs: 200 });
});
afterAll(() => plane?.stop());

const spec = (machineType: string) => managedSpec({ cloudInit: { inline: '#!/bin/sh\n' }, machineType });
const stored = async (name: string): Promise<ProxyResource> => (await plane.store.get(name))!.proxy;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const liveInstances = (uid: string) =>
  plane.compute.admin
    .instances({ project: plane.projectId })
    .filter((i) => i.labels['proxyplane-uid'] === uid && i.status !== 'STOPPING');
const deletions = (uid: string) =>
  plane.instanceEvents.filter((e) => e.kind === 'deleted' && e.labels['proxyplane-uid'] === uid).length;

/** Requeue-sweep stand-in: passes until `done`, the way due times would bring them. */
async function driveUntil(name: string, done: (p: ProxyResource) => boolean): Promise<ProxyResource> {
  for (let i = 0; i < 80; i++) {
    const p = await stored(name);
    if (done(p)) return p;
    await handleReconcile(plane.deps, { proxy: name, reason: 'requeue' });
    await sleep(150);
  }
  throw new Error(`${name} did not reach the expected state: ${JSON.stringify((await stored(name)).status)}`);
}

/** Deps whose provider holds the first get() until released: a pass stalled after its document read. */
function stalledDeps(): { deps: ReconcileDeps; entered: Promise<void>; release: () => void } {
  let release!: () => void;
  let enter!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const entered = new Promise<void>((r) => {
    enter = r;
  });
  const inner = plane.deps.providers.get('gce')!;
  let held = false;
  const provider: Provider = {
    name: inner.name,
    create: (r) => inner.create(r),
    delete: (id) => inner.delete(id),
    listByTag: () => inner.listByTag(),
    ...(inner.lastCreateFailure ? { lastCreateFailure: (id: string) => inner.lastCreateFailure!(id) } : {}),
    get: async (id) => {
      if (!held) {
        held = true;
        enter();
        await gate;
      }
      return inner.get(id);
    },
  };
  return { deps: { ...plane.deps, providers: new Map([['gce', provider]]) }, entered, release };
}

/** Lets the stalled pass go on: it ends in a conflict, deletes nothing, and the one new instance stays. */
async function releaseExpectingNoDelete(
  slow: ReturnType<typeof stalledDeps>,
  stalled: ReturnType<typeof runPass>,
  uid: string,
  deletedBefore: number,
): Promise<void> {
  slow.release();
  const result = await stalled;
  expect(result.kind).toBe('conflict');
  await sleep(500); // past the emulator's delete delay: a delete would have landed by now
  expect(deletions(uid)).toBe(deletedBefore);
  expect(liveInstances(uid)).toHaveLength(1);
}

const provisioned = (p: ProxyResource) =>
  p.status.phase === 'Provisioned' && p.status.nextReconcileAt === null;

describe('a pass stalled across a replacement never deletes the new instance', () => {
  it('stale status: read while Replacing, the replacement is created meanwhile', async () => {
    const proxy = aProxy({ uid: randomUUID(), name: 'stale-status', spec: spec('e2-small') });
    await plane.store.create(proxy);
    await driveUntil(proxy.name, provisioned);
    const v = (await plane.store.get(proxy.name))!.version;
    expect(await plane.store.replaceSpec(proxy.name, spec('e2-medium'), v)).toBe('written');
    // Old instance deleted and gone; the status still names it (Replacing, old hash).
    await handleReconcile(plane.deps, { proxy: proxy.name, reason: 'spec-changed' });
    for (let i = 0; i < 50 && liveInstances(proxy.uid).length > 0; i++) await sleep(100);
    expect(liveInstances(proxy.uid)).toHaveLength(0);
    const replacing = await stored(proxy.name);
    expect(replacing.status.providerId).not.toBeNull();

    const slow = stalledDeps();
    const stalled = runPass(slow.deps, proxy.name, false);
    await slow.entered;
    // Meanwhile a normal delivery finds the old instance gone, records the new hash and creates the new one.
    const after = await driveUntil(proxy.name, provisioned);
    expect(after.status.specHash).not.toBe(replacing.status.specHash);
    const [fresh] = liveInstances(proxy.uid);
    expect(fresh?.labels['proxyplane-spec-hash']).toBe(after.status.specHash);
    const deletedBefore = deletions(proxy.uid);

    await releaseExpectingNoDelete(slow, stalled, proxy.uid, deletedBefore);
    // A pass from a fresh read leaves the new instance alone.
    await handleReconcile(plane.deps, { proxy: proxy.name, reason: 'requeue' });
    expect(deletions(proxy.uid)).toBe(deletedBefore);
    expect((await stored(proxy.name)).status.phase).toBe('Provisioned');
  });

  it('stale spec: read before the spec edit, the whole replacement happens meanwhile', async () => {
    const proxy = aProxy({ uid: randomUUID(), name: 'stale-spec', spec: spec('e2-small') });
    await plane.store.create(proxy);
    const before = await driveUntil(proxy.name, provisioned);

    const slow = stalledDeps();
    const stalled = runPass(slow.deps, proxy.name, false);
    await slow.entered;
    const v = (await plane.store.get(proxy.name))!.version;
    expect(await plane.store.replaceSpec(proxy.name, spec('e2-medium'), v)).toBe('written');
    const after = await driveUntil(
      proxy.name,
      (p) => provisioned(p) && p.status.specHash !== before.status.specHash,
    );
    const [fresh] = liveInstances(proxy.uid);
    expect(fresh?.labels['proxyplane-spec-hash']).toBe(after.status.specHash);
    const deletedBefore = deletions(proxy.uid);

    await releaseExpectingNoDelete(slow, stalled, proxy.uid, deletedBefore);
  });
});
