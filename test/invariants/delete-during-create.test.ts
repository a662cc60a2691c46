// A proxy deleted while a reconcile pass is creating its instance must not leave the VM running. The
// deletion lands between the pass's read (no instance recorded yet) and its status write, so that write
// loses: either the pass's own re-run finds the deletion and records the instance this delivery created
// (pass.ts recordingCreated), deleting it before the document as for any proxy, or a concurrent
// delete-requested delivery has already deleted the document and the write finds it gone (or a proxy
// created again under the name, whose instance the re-run makes). Without a cleanup the VM runs on, billed, until the orphan GC's first
// sweep past MinAge (10 to 20 minutes deployed) and counts toward its deletion alert — for nothing more
// than `proxies create` followed quickly by `proxies delete`. No process crashes here: that gap stays the
// GC's (test/integration/gc-crash.test.ts). Real emulators; the pass is held inside provider.create.
// With the document gone, the instance is then still being created, and the Compute emulator refuses its
// delete as GCE does (400 resourceNotReady until the insert Operation is DONE): the delivery hands the
// delete to an `unrecorded-instance` request, which is delivered here as Pub/Sub would, redelivered while
// it throws.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { handleReconcile, type ReconcileDeps } from '../../functions/reconcile/src/handler.js';
import type { Provider } from '../../shared/src/ports/provider.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { type ReconcilePlane, startReconcilePlane } from './reconcile-plane.js';

let plane: ReconcilePlane;

beforeAll(async () => {
  plane = await startReconcilePlane({ bootDelayMs: 200 });
});
afterAll(() => plane?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Delivers what the deliveries published, as Pub/Sub would: a request whose handler throws is redelivered
 * (here after 100 ms instead of Pub/Sub's 10 s backoff). Returns how many deliveries threw.
 */
async function deliverPublished(): Promise<number> {
  let refused = 0;
  while (plane.published.length > 0) {
    const request = plane.published[0]!;
    try {
      await handleReconcile(plane.deps, request);
      plane.published.shift();
    } catch {
      refused++;
      if (refused > 50) throw new Error('the unrecorded instance was never deleted');
      await sleep(100);
    }
  }
  return refused;
}
const liveInstances = (uid: string) =>
  plane.compute.admin
    .instances({ project: plane.projectId })
    .filter((i) => i.labels['proxyplane-uid'] === uid && i.status !== 'STOPPING');

/** Deps whose provider holds the first create() — before or after the real insert — until released. */
function heldCreate(when: 'before-insert' | 'after-insert') {
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
  const hold = async () => {
    if (held) return;
    held = true;
    enter();
    await gate;
  };
  const provider: Provider = {
    name: inner.name,
    get: (id) => inner.get(id),
    delete: (id) => inner.delete(id),
    listByTag: () => inner.listByTag(),
    ...(inner.lastCreateFailure ? { lastCreateFailure: (id: string) => inner.lastCreateFailure!(id) } : {}),
    create: async (request) => {
      if (when === 'before-insert') await hold();
      const out = await inner.create(request);
      if (when === 'after-insert') await hold();
      return out;
    },
  };
  const deps: ReconcileDeps = { ...plane.deps, providers: new Map([['gce', provider]]) };
  return { deps, entered, release };
}

describe('a deletion racing the create never leaves the instance behind', () => {
  beforeEach(() => {
    plane.published.length = 0;
  });

  it("the pass's own re-run records the instance it created and deletes it before the document", async () => {
    const proxy = aProxy({
      uid: randomUUID(),
      name: 'race-rerun',
      spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }),
    });
    await plane.store.create(proxy);
    const slow = heldCreate('after-insert');
    const delivery = handleReconcile(slow.deps, { proxy: proxy.name, reason: 'created' });
    await slow.entered;
    expect(liveInstances(proxy.uid)).toHaveLength(1);
    expect(await plane.store.requestDeletion(proxy.name, new Date())).toBe('written');

    slow.release();
    // The re-run is the proxy's deletion, with the instance recorded: no request of its own is needed.
    expect((await delivery).last).toBe('written');
    expect((await plane.store.get(proxy.name))?.proxy.status).toMatchObject({
      phase: 'Deleting',
      providerId: expect.stringContaining(`/instances/`),
    });
    expect(plane.published).toEqual([]);
    // The requeue sweep's passes (DeletionPoll apart deployed): the document goes once the instance has.
    for (let i = 0; i < 20 && (await plane.store.get(proxy.name)); i++) {
      await sleep(250);
      await handleReconcile(plane.deps, { proxy: proxy.name, reason: 'requeue' });
    }
    expect(await plane.store.get(proxy.name)).toBeNull();
    expect(liveInstances(proxy.uid)).toEqual([]);
  });

  it('a concurrent delivery deleted the document first: the write finds it gone, the instance goes', async () => {
    const proxy = aProxy({
      uid: randomUUID(),
      name: 'race-gone',
      spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }),
    });
    await plane.store.create(proxy);
    const slow = heldCreate('before-insert');
    const delivery = handleReconcile(slow.deps, { proxy: proxy.name, reason: 'created' });
    await slow.entered;
    expect(await plane.store.requestDeletion(proxy.name, new Date())).toBe('written');
    // The delete-requested delivery: nothing recorded, nothing there yet → the document goes.
    expect((await handleReconcile(plane.deps, { proxy: proxy.name, reason: 'delete-requested' })).last).toBe(
      'deleted',
    );
    expect(await plane.store.get(proxy.name)).toBeNull();

    slow.release();
    const outcome = await delivery;
    expect(outcome.last).toBe('not-found');
    await deliverPublished();
    await sleep(500);
    expect(liveInstances(proxy.uid)).toEqual([]);
  });

  it('the name was taken again meanwhile: the deleted proxy’s instance goes, the new proxy’s stays', async () => {
    // `proxies delete` then `proxies create` of the same name (operations.md's move to another zone) while a
    // pass was creating the first proxy's VM: its write finds the new proxy's document (a conflict, not
    // gone), and the re-run creates the new proxy's VM in the same delivery.
    const old = aProxy({
      uid: randomUUID(),
      name: 'race-retaken',
      spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }),
    });
    await plane.store.create(old);
    const slow = heldCreate('before-insert');
    const delivery = handleReconcile(slow.deps, { proxy: old.name, reason: 'created' });
    await slow.entered;
    expect(await plane.store.requestDeletion(old.name, new Date())).toBe('written');
    expect((await handleReconcile(plane.deps, { proxy: old.name, reason: 'delete-requested' })).last).toBe(
      'deleted',
    );
    const again = aProxy({
      uid: randomUUID(),
      name: old.name,
      spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }),
    });
    await plane.store.create(again);

    slow.release();
    expect((await delivery).last).toBe('written');
    expect((await plane.store.get(again.name))?.proxy.status.providerId).toContain('/instances/');
    await deliverPublished();
    await sleep(500);
    expect(liveInstances(old.uid)).toEqual([]);
    expect(liveInstances(again.uid)).toHaveLength(1);
  });

  it('an instance still being created when its delete comes is deleted once its creation finishes', async () => {
    plane.compute.admin.setBootDelay(1_500, 1); // the next insert's Operation runs 1.5 s
    const proxy = aProxy({
      uid: randomUUID(),
      name: 'race-creating',
      spec: managedSpec({ cloudInit: { inline: '#!/bin/sh\n' } }),
    });
    await plane.store.create(proxy);
    const slow = heldCreate('before-insert');
    const delivery = handleReconcile(slow.deps, { proxy: proxy.name, reason: 'created' });
    await slow.entered;
    expect(await plane.store.requestDeletion(proxy.name, new Date())).toBe('written');
    expect((await handleReconcile(plane.deps, { proxy: proxy.name, reason: 'delete-requested' })).last).toBe(
      'deleted',
    );
    slow.release();
    expect((await delivery).last).toBe('not-found');

    // GCE refused the delete: handed off, not taken for done.
    expect(plane.published).toEqual([
      {
        proxy: proxy.name,
        reason: 'unrecorded-instance',
        instance: { provider: 'gce', providerId: expect.stringContaining('/instances/'), uid: proxy.uid },
      },
    ]);
    const handedOff = plane.published[0]!;
    expect(liveInstances(proxy.uid)).toHaveLength(1);
    // Redelivered while the creation runs (each delivery one refused delete), taken once it is DONE.
    expect(await deliverPublished()).toBeGreaterThan(0);
    await sleep(500); // past the emulator's delete delay
    expect(liveInstances(proxy.uid)).toEqual([]);
    // A duplicate delivery of the same request is harmless: the instance is gone, nothing else happens.
    await expect(handleReconcile(plane.deps, handedOff)).resolves.toMatchObject({ passes: 0 });
  });
});
