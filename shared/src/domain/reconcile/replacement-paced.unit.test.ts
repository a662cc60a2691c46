// The plan for a stale hash under the replacement cap (replacement-slots.ts): a serving instance is
// deleted only with a slot; refused, the old instance keeps serving, the status says ReplacementQueued and
// the proxy asks again after ReplacementRetry. The end of a replacement frees the slot.
import { describe, expect, it } from 'vitest';
import { aProxy, managedSpec } from '../../testing/proxy-fixtures.js';
import type { Condition, ManagedSpec, ProxyResource } from '../proxy.js';
import { specHash } from '../spec-hash.js';
import { finalizeStatus } from './patch-status.js';
import { reconcile } from './reconcile.js';
import { defaultPollIntervals as iv, type Observation, type ObservedInstance } from './types.js';

const now = new Date('2026-03-01T12:00:00Z');
const earlier = new Date('2026-03-01T11:00:00Z');
const uid = '11111111-2222-4333-8444-555555555555';
const spec = managedSpec() as ManagedSpec;
const PORT = spec.port;
const digest = 'sha256:cloud-init';
const V7 = 'projects/p/secrets/c/versions/7';
const V8 = 'projects/p/secrets/c/versions/8';
/** The default cloud-init's render changed (an upgrade): a new digest, the same port and credentials. */
const newDigest = 'sha256:cloud-init-2';
const oldHash = specHash(spec as never, digest, V7);
const providerId = 'zones/us-central1-a/instances/pp-111111112222433384445';

const condition = (type: string, status: Condition['status'], reason: string): Condition => ({
  type,
  status,
  reason,
  message: 'm',
  lastTransitionTime: earlier,
  observedGeneration: 1,
});

/** A Ready proxy on its old instance, built from the previous render of the default cloud-init. */
const ready = (over: Partial<ProxyResource['status']> = {}): ProxyResource =>
  aProxy({
    uid,
    spec,
    status: {
      providerId,
      specHash: oldHash,
      ip: '10.0.0.9',
      phase: 'Ready',
      conditions: [
        condition('Provisioned', 'True', 'Created'),
        condition('Healthy', 'True', 'ProbeSucceeded'),
      ],
      ...over,
    },
  });

const instance = (
  state: ObservedInstance['state'],
  label = oldHash,
  serves: ObservedInstance['serves'] | 'unsaid' = { port: PORT, credentialsSecret: V7 },
): Observation['instance'] => ({
  kind: 'found',
  instance: {
    providerId,
    state,
    ip: state === 'Running' ? '10.0.0.9' : null,
    specHash: label,
    ...(serves === 'unsaid' ? {} : { serves }),
  },
});

const upgraded = (over: Partial<Observation> = {}): Observation => ({
  now,
  providerRegistered: true,
  cloudInit: { ok: true, script: '#!/bin/sh\n', digest: newDigest, credentialsSecret: V7 },
  instance: instance('Running'),
  health: null,
  ...over,
});

const provisioned = (s: { conditions: Condition[] }) => s.conditions.find((c) => c.type === 'Provisioned');

describe('a stale hash on a serving instance needs a replacement slot', () => {
  it('asks for one: the delete plan says take', () => {
    const plan = reconcile(ready(), upgraded(), iv);
    expect(plan).toMatchObject({ branch: 'replace/delete', action: { kind: 'delete' }, slot: 'take' });
  });

  it('slot free → replace: the old instance is deleted', () => {
    const plan = reconcile(ready(), upgraded({ replacementSlot: { granted: true } }), iv);
    expect(plan).toMatchObject({
      branch: 'replace/delete',
      action: { kind: 'delete', providerId },
      requeue: { kind: 'after', ms: iv.DeletionPoll },
    });
    expect(provisioned(plan.status)?.reason).toBe('Replacing');
  });

  it('no slot → the old instance keeps serving, the status says queued, and it asks again later', () => {
    const proxy = ready();
    const plan = reconcile(proxy, upgraded({ replacementSlot: { granted: false, inUse: 2, limit: 2 } }), iv);
    expect(plan.action).toBeNull();
    expect(plan.branch).toBe('replace/queued');
    expect(plan.requeue).toEqual({ kind: 'after', ms: iv.ReplacementRetry });
    const status = finalizeStatus(proxy, plan.status, plan.requeue, now);
    // Still serving on its old instance: Ready, leasable, its address and health kept, the old hash kept.
    expect(status).toMatchObject({ phase: 'Ready', ip: '10.0.0.9', providerId, specHash: oldHash });
    expect(provisioned(status)).toMatchObject({ status: 'True', reason: 'ReplacementQueued' });
    expect(provisioned(status)?.message).toMatch(/waiting for a replacement slot \(all 2 in use/);
    expect(status.nextReconcileAt).toEqual(new Date(now.getTime() + iv.ReplacementRetry));
  });

  it('a queued proxy asks again on its next pass (the refusal is not remembered)', () => {
    const queued = ready({
      conditions: [
        condition('Provisioned', 'True', 'ReplacementQueued'),
        condition('Healthy', 'True', 'ProbeSucceeded'),
      ],
    });
    expect(reconcile(queued, upgraded(), iv)).toMatchObject({ branch: 'replace/delete', slot: 'take' });
  });

  it('an instance built from another spec (its label) takes a slot too when it serves', () => {
    const newHash = specHash(spec as never, newDigest, V7);
    const proxy = ready({ specHash: newHash });
    expect(reconcile(proxy, upgraded(), iv)).toMatchObject({ branch: 'stale/delete', slot: 'take' });
    const refused = reconcile(
      proxy,
      upgraded({ replacementSlot: { granted: false, inUse: 1, limit: 1 } }),
      iv,
    );
    expect(refused).toMatchObject({ branch: 'replace/queued', action: null });
  });
});

describe('a rotation of the credentials rolls too (served-credentials.ts)', () => {
  const full = { replacementSlot: { granted: false as const, inUse: 2, limit: 2 } };
  /** Version 8 was added: the spec resolves to it; the old instance booted with 7. */
  const rotated = (over: Partial<Observation> = {}) =>
    upgraded({ cloudInit: { ok: true, script: '#!/bin/sh\n', digest, credentialsSecret: V8 }, ...over });

  it('while the version the old instance serves is readable, it waits for a slot and hands that version out', () => {
    const proxy = ready();
    expect(reconcile(proxy, rotated({ servedCredentials: 'readable' }), iv)).toMatchObject({
      branch: 'replace/delete',
      slot: 'take',
    });
    const plan = reconcile(proxy, rotated({ servedCredentials: 'readable', ...full }), iv);
    expect(plan).toMatchObject({ branch: 'replace/queued', action: null });
    const status = finalizeStatus(proxy, plan.status, plan.requeue, now);
    expect(status).toMatchObject({ phase: 'Ready', specHash: oldHash });
    // Leases, the probe and the snapshots hand out version 7, which the old VM reads.
    expect(status.servedCredentials).toEqual({ secret: 'c', version: '7' });
  });

  it('Secret Manager not saying (a blip) is no reason to take the proxy down: it waits too', () => {
    const plan = reconcile(ready(), rotated({ servedCredentials: 'unknown', ...full }), iv);
    expect(plan.branch).toBe('replace/queued');
  });

  it('a revoked version (disabled, destroyed) is replaced at once, slot or not', () => {
    const plan = reconcile(ready(), rotated({ servedCredentials: 'revoked', ...full }), iv);
    expect(plan).toMatchObject({ branch: 'replace/delete', action: { kind: 'delete', providerId } });
    expect(plan.slot).toBeUndefined();
    // The instance is going: nothing is served any more, clients fall back to the spec's reference.
    expect(plan.status.servedCredentials).toBeUndefined();
  });

  it('unobserved, it is not assumed readable', () => {
    const plan = reconcile(ready(), rotated(full), iv);
    expect(plan).toMatchObject({ branch: 'replace/delete', action: { kind: 'delete' } });
  });
});

describe('status.servedCredentials follows the instance', () => {
  const newHash = specHash(spec as never, newDigest, V7);

  it('a steady instance on the default cloud-init records the version it booted with', () => {
    const plan = reconcile(
      ready({ specHash: newHash }),
      upgraded({ instance: instance('Running', newHash) }),
      iv,
    );
    expect(plan.status.servedCredentials).toEqual({ secret: 'c', version: '7' });
  });

  it('an instance that does not say records none (the spec’s reference)', () => {
    const said = ready({ specHash: newHash, servedCredentials: { secret: 'c', version: '6' } });
    const unsaid = reconcile(said, upgraded({ instance: instance('Running', newHash, 'unsaid') }), iv);
    expect(unsaid.status.servedCredentials).toBeUndefined();
  });

  it('a cloud-init of the operator’s own records the version its instance was made with', () => {
    // Made with version 7 (what `latest` was then): clients get 7 at once, not `latest` through a reader's
    // cache, which after a rotation still says 6 for up to a minute (a probe 407s the new VM meanwhile).
    const own = aProxy({ ...ready(), spec: { ...spec, cloudInit: { inline: '#!/bin/sh\n' } } });
    const ownHash = specHash(own.spec as never, digest, V7);
    const plan = reconcile(
      aProxy({ ...own, status: { ...own.status, specHash: ownHash } }),
      upgraded({
        cloudInit: { ok: true, script: '#!/bin/sh\n', digest, credentialsSecret: V7 },
        instance: instance('Running', ownHash),
      }),
      iv,
    );
    expect(plan.branch).toBe('running');
    expect(plan.status.servedCredentials).toEqual({ secret: 'c', version: '7' });
  });
});

describe('what takes no slot', () => {
  it('a change clients see is replaced at once, slot or not: the old instance could not serve it', () => {
    const full = { replacementSlot: { granted: false as const, inUse: 2, limit: 2 } };
    // Another port: lease URLs are the spec's port at the old instance's address.
    const moved = aProxy({ ...ready(), spec: { ...spec, port: PORT + 1 } });
    // An instance that does not say what it serves, and a cloud-init of the operator's own.
    const unknown = upgraded({ ...full, instance: instance('Running', oldHash, 'unsaid') });
    const own = aProxy({ ...ready(), spec: { ...spec, cloudInit: { inline: '#!/bin/sh\n' } } });
    for (const [p, o] of [
      [moved, upgraded(full)],
      [ready(), unknown],
      [own, upgraded(full)],
    ] as const) {
      const plan = reconcile(p, o, iv);
      expect(plan).toMatchObject({ branch: 'replace/delete', action: { kind: 'delete', providerId } });
      expect(plan.slot).toBeUndefined();
    }
  });

  it('a stale instance that is not serving (booting, stopped) is replaced at once', () => {
    for (const state of ['Provisioning', 'Stopped', 'Terminated'] as const) {
      const plan = reconcile(ready(), upgraded({ instance: instance(state) }), iv);
      expect(plan, state).toMatchObject({ branch: 'replace/delete', action: { kind: 'delete' } });
      expect(plan.slot, state).toBeUndefined();
    }
  });

  it('a first create, and a re-create of a vanished instance', () => {
    const fresh = aProxy({ uid, spec });
    expect(reconcile(fresh, upgraded({ instance: null }), iv)).toMatchObject({ branch: 'create' });
    expect(reconcile(fresh, upgraded({ instance: null }), iv).slot).toBeUndefined();
    const vanished = reconcile(ready(), upgraded({ instance: { kind: 'missing', createFailure: null } }), iv);
    expect(vanished).toMatchObject({ branch: 'replace/gone', action: null });
    expect(vanished.slot).toBeUndefined();
  });
});

describe('the end of a replacement (the new instance healthy) releases the slot', () => {
  const newHash = specHash(spec as never, newDigest, V7);
  const booting = ready({
    specHash: newHash,
    ip: null,
    conditions: [condition('Provisioned', 'False', 'Provisioning')],
  });

  /** The new instance as its first Running pass staged it (Provisioned turned True then). */
  const booted = ready({
    specHash: newHash,
    conditions: [{ ...condition('Provisioned', 'True', 'Created'), lastTransitionTime: earlier }],
  });
  const verdict = (healthy: boolean): Observation['health'] => ({
    instance: `${providerId}@${earlier.toISOString()}`,
    verdict: {
      healthy,
      latencyMillis: 12,
      checkedAt: now,
      reason: healthy ? 'ProbeSucceeded' : 'ProbeFailed',
      message: 'm',
      unreachableRoutes: [],
    },
  });

  it('booting is not enough: the pass that first sees the new instance Running keeps the slot', () => {
    const plan = reconcile(booting, upgraded({ instance: instance('Running', newHash) }), iv);
    expect(plan.branch).toBe('running');
    expect(plan.slot).toBeUndefined();
  });

  it('the pass that first records a Healthy verdict about the new instance releases', () => {
    const running = { instance: instance('Running', newHash) };
    expect(reconcile(booted, upgraded({ ...running, health: verdict(true) }), iv)).toMatchObject({
      branch: 'running',
      slot: 'release',
    });
    // Failing its checks, it keeps the slot: a change that breaks proxies stops at the cap.
    expect(reconcile(booted, upgraded({ ...running, health: verdict(false) }), iv).slot).toBeUndefined();
  });

  it('a steady proxy’s passes ask nothing of the slots', () => {
    const steady = ready({ specHash: newHash });
    const plan = reconcile(steady, upgraded({ instance: instance('Running', newHash) }), iv);
    expect(plan.branch).toBe('running');
    expect(plan.slot).toBeUndefined();
  });

  it('the deletion of the proxy releases', () => {
    const deleting = aProxy({ uid, spec, deletionRequestedAt: now });
    expect(reconcile(deleting, upgraded({ instance: null }), iv)).toMatchObject({
      action: { kind: 'deleteDocument' },
      slot: 'release',
    });
  });
});
