// The newest credentials version cannot be read (disabled, destroyed): nothing new is built on it, and a
// Running instance keeps serving a version that can still be read, or is deleted when that one is revoked
// too (cloud-init-error.ts).
import { describe, expect, it } from 'vitest';
import { healthyVerdict } from '../../testing/healthy-conditions.js';
import { aProxy, managedSpec } from '../../testing/proxy-fixtures.js';
import type { Condition, ManagedSpec, ProxyResource } from '../proxy.js';
import { finalizeStatus } from './patch-status.js';
import { reconcile } from './reconcile.js';
import { defaultPollIntervals as iv, type Observation, type ObservedInstance } from './types.js';

const now = new Date('2026-03-01T12:00:00Z');
const earlier = new Date('2026-03-01T11:00:00Z');
const spec = managedSpec() as ManagedSpec;
const providerId = 'zones/us-central1-a/instances/pp-111111112222433384445';
const V7 = 'projects/p/secrets/c/versions/7';

const condition = (type: string, status: Condition['status'], reason: string): Condition => ({
  type,
  status,
  reason,
  message: 'm',
  lastTransitionTime: earlier,
  observedGeneration: 1,
});
const ready = (over: Partial<ProxyResource> = {}): ProxyResource =>
  aProxy({
    spec,
    status: {
      providerId,
      specHash: 'h',
      ip: '10.0.0.9',
      phase: 'Ready',
      conditions: [
        condition('Provisioned', 'True', 'Created'),
        condition('Healthy', 'True', 'ProbeSucceeded'),
      ],
    },
    ...over,
  });
const running = (serves: ObservedInstance['serves'] = { port: spec.port, credentialsSecret: V7 }) => ({
  kind: 'found' as const,
  instance: { providerId, state: 'Running' as const, ip: '10.0.0.9', specHash: 'h', serves },
});
/** Version 8, the newest, was disabled: resolving `latest` fails. */
const newestDisabled = (over: Partial<Observation> = {}): Observation => ({
  now,
  providerRegistered: true,
  cloudInit: {
    ok: false,
    failure: { kind: 'invalid', message: 'failed_precondition: version 8 is DISABLED' },
  },
  instance: running(),
  health: null,
  ...over,
});
const provisioned = (s: { conditions: Condition[] }) => s.conditions.find((c) => c.type === 'Provisioned');

describe('the newest credentials version cannot be read', () => {
  it('a Running instance serving a readable version keeps serving: leasable, its version handed out, the error shown', () => {
    const proxy = ready();
    const plan = reconcile(proxy, newestDisabled({ servedCredentials: 'readable' }), iv);
    expect(plan).toMatchObject({ branch: 'cloud-init/error-serving', action: null });
    expect(plan.requeue).toEqual({ kind: 'after', ms: iv.CloudInitRetryMax });
    const status = finalizeStatus(proxy, plan.status, plan.requeue, now);
    expect(status).toMatchObject({ phase: 'Ready', ip: '10.0.0.9', providerId });
    expect(status.servedCredentials).toEqual({ secret: 'c', version: '7' });
    expect(provisioned(status)).toMatchObject({ status: 'True', reason: 'CloudInitError' });
    expect(provisioned(status)?.message).toMatch(/DISABLED; the instance keeps serving/);
  });

  it('a replacement’s new instance proving healthy while it keeps serving frees the slot, as in the running arm', () => {
    // Booted on version 7 (a replacement holding a slot), not yet found healthy; then version 8 came and
    // was disabled. The running arm, once a version is readable again, would find it healthy already.
    const booted = ready({
      status: { ...ready().status, conditions: [condition('Provisioned', 'True', 'Created')] },
    });
    const health: Observation['health'] = {
      instance: `${providerId}@${earlier.toISOString()}`,
      verdict: healthyVerdict(now),
    };
    const plan = reconcile(booted, newestDisabled({ servedCredentials: 'readable', health }), iv);
    expect(plan).toMatchObject({ branch: 'cloud-init/error-serving', slot: 'release' });
    // Already healthy before: a steady proxy asks nothing of the slots.
    const steady = reconcile(ready(), newestDisabled({ servedCredentials: 'readable', health }), iv);
    expect(steady.branch).toBe('cloud-init/error-serving');
    expect(steady.slot).toBeUndefined();
  });

  it.each(['Provisioning', 'Stopped', 'Terminated'] as const)(
    'an instance seen %s meanwhile is not handed out again before the probe judges the VM that boots',
    (state) => {
      const health: Observation['health'] = {
        instance: `${providerId}@${earlier.toISOString()}`,
        verdict: healthyVerdict(earlier),
      };
      const staging = {
        kind: 'found' as const,
        instance: { ...running().instance, state, ip: null },
      };
      const proxy = ready();
      const down = reconcile(proxy, newestDisabled({ instance: staging, health }), iv);
      expect(down.branch).toBe('cloud-init/error');
      const booting = { ...proxy, status: finalizeStatus(proxy, down.status, down.requeue, now) };
      expect(booting.status.conditions.map((c) => c.type)).toEqual(['Provisioned']);
      const later = new Date(now.getTime() + 60_000);
      const up = reconcile(
        booting,
        newestDisabled({ now: later, servedCredentials: 'readable', health }),
        iv,
      );
      expect(up.branch).toBe('cloud-init/error-serving');
      expect(finalizeStatus(booting, up.status, up.requeue, later).phase).toBe('Provisioned');
    },
  );

  it('Secret Manager not saying about the served version is no reason to take it down', () => {
    expect(reconcile(ready(), newestDisabled({ servedCredentials: 'unknown' }), iv).branch).toBe(
      'cloud-init/error-serving',
    );
  });

  it('the served version revoked too: the instance is deleted (it accepts only a revoked password)', () => {
    // On a cloud-init of the proxy's own as well: its VM serves the version it was made with.
    const own = ready({ spec: { ...spec, cloudInit: { inline: '#!/bin/sh\n' } } });
    expect(reconcile(own, newestDisabled({ servedCredentials: 'revoked' }), iv)).toMatchObject({
      branch: 'cloud-init/error-revoked',
      action: { kind: 'delete', providerId },
    });
    const plan = reconcile(ready(), newestDisabled({ servedCredentials: 'revoked' }), iv);
    expect(plan).toMatchObject({
      branch: 'cloud-init/error-revoked',
      action: { kind: 'delete', providerId },
      requeue: { kind: 'after', ms: iv.DeletionPoll },
    });
    expect(plan.status).toMatchObject({ ip: null, providerId });
    expect(plan.status.servedCredentials).toBeUndefined();
    expect(provisioned(plan.status)).toMatchObject({ status: 'False', reason: 'CloudInitError' });
  });

  it('otherwise as before: kept as it is, CloudInitError, not leasable — no instance, one that does not say, another port, a cloud-init of its own', () => {
    const own = ready({ spec: { ...spec, cloudInit: { inline: '#!/bin/sh\n' } } });
    const moved = ready({ spec: { ...spec, port: spec.port + 1 } });
    for (const [p, o] of [
      [ready(), newestDisabled({ instance: null })],
      [ready(), newestDisabled({ instance: running(undefined) })],
      [moved, newestDisabled({ servedCredentials: 'readable' })],
      [own, newestDisabled({ servedCredentials: 'readable' })],
    ] as const) {
      const plan = reconcile(p, o, iv);
      expect(plan).toMatchObject({ branch: 'cloud-init/error', action: null });
      expect(provisioned(plan.status)).toMatchObject({ status: 'False', reason: 'CloudInitError' });
    }
  });

  it('an instance that cannot be observed for a moment (a GCE blip) keeps a serving proxy as it is: redelivered, nothing written', () => {
    // Serving on version 7 while version 8 is disabled, for an hour already.
    const proxy = ready({
      status: {
        ...ready().status,
        servedCredentials: { secret: 'c', version: '7' },
        conditions: [
          condition('Provisioned', 'True', 'CloudInitError'),
          condition('Healthy', 'True', 'ProbeSucceeded'),
        ],
      },
    });
    const blip = { kind: 'error' as const, failure: { kind: 'transient' as const, message: 'HTTP 503' } };
    const plan = reconcile(proxy, newestDisabled({ instance: blip }), iv);
    expect(plan.action).toBeNull();
    expect(plan.status).toBe(proxy.status);
    expect(plan.requeue).toEqual({ kind: 'error', failure: blip.failure });
  });
});
