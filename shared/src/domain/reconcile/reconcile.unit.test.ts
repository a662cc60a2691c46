// The state machine, one row per arm of the seed's §3 and §4 diagrams, with a fixed clock.
import { describe, expect, it } from 'vitest';
import { healthyVerdict } from '../../testing/healthy-conditions.js';
import { aProxy, externalSpec, managedSpec } from '../../testing/proxy-fixtures.js';
import { healthInstanceKey } from '../health/instance-key.js';
import { instanceNameFromUid } from '../instance-name.js';
import type { Condition, Phase, ProxyResource } from '../proxy.js';
import { specHash } from '../spec-hash.js';
import { addressGone, settle } from './failure.js';
import { finalizeStatus, SAFETY_NET_MS, statusChanged } from './patch-status.js';
import { observationNeeds, reconcile } from './reconcile.js';
import {
  type ActionResult,
  type HealthVerdict,
  type InstanceObservation,
  defaultPollIntervals as iv,
  type Observation,
  type Plan,
} from './types.js';

const now = new Date('2026-03-01T12:00:00Z');
const earlier = new Date('2026-03-01T11:00:00Z');
const uid = '11111111-2222-4333-8444-555555555555';
const spec = managedSpec();
const digest = 'sha256:cloud-init';
const hash = specHash(spec as never, digest);
const providerId = 'zones/us-central1-a/instances/pp-111111112222433384445';

const provisioned = (status: Condition['status'], reason: string, generation = 1): Condition => ({
  type: 'Provisioned',
  status,
  reason,
  message: 'm',
  lastTransitionTime: earlier,
  observedGeneration: generation,
});

/** A managed proxy whose instance exists and whose hash is current. */
const live = (over: Parameters<typeof aProxy>[0] = {}): ProxyResource =>
  aProxy({
    uid,
    spec,
    ...over,
    status: { providerId, specHash: hash, ip: '10.0.0.9', ...over.status },
  });

const found = (
  state: string,
  ip: string | null = '10.0.0.9',
  label: string | null = hash,
): InstanceObservation =>
  ({ kind: 'found', instance: { providerId, state, ip, specHash: label } }) as InstanceObservation;
const missing: InstanceObservation = { kind: 'missing', createFailure: null };
const failed = (kind: 'quota' | 'permanent' | 'transient'): InstanceObservation => ({
  kind: 'error',
  failure: { kind, message: `${kind} failure` },
});

const obs = (over: Partial<Observation> = {}): Observation => ({
  now,
  providerRegistered: true,
  cloudInit: { ok: true, script: '#!/bin/sh\necho hi', digest, credentialsSecret: null },
  instance: null,
  health: null,
  ...over,
});

const okVerdict: HealthVerdict = healthyVerdict(now);

interface Row {
  arm: string;
  proxy: ProxyResource;
  obs: Observation;
  result?: ActionResult;
  branch: string;
  action: string | null;
  requeue: Plan['requeue']['kind'];
  requeueMs?: number;
  phase: Phase;
  reason?: string;
  ip?: string | null;
  providerId?: string | null;
}

const rows: Row[] = [
  // §4 reconcileDelete
  {
    arm: 'delete, no instance recorded → document deleted',
    proxy: aProxy({ deletionRequestedAt: now }),
    obs: obs(),
    branch: 'delete/no-instance',
    action: 'deleteDocument',
    requeue: 'none',
    phase: 'Deleting',
  },
  {
    arm: 'delete, instance NotFound → document deleted',
    proxy: live({ deletionRequestedAt: now }),
    obs: obs({ instance: missing }),
    branch: 'delete/gone',
    action: 'deleteDocument',
    requeue: 'none',
    phase: 'Deleting',
  },
  {
    arm: 'delete, instance exists → prov.Delete, Deleting, DeletionPoll',
    proxy: live({ deletionRequestedAt: now }),
    obs: obs({ instance: found('Running') }),
    branch: 'delete/instance',
    action: 'delete',
    requeue: 'after',
    requeueMs: iv.DeletionPoll,
    phase: 'Deleting',
    reason: 'Deleting',
    ip: null,
  },
  {
    arm: 'delete, instance still being created → prov.Delete refused (not-ready), DeletionWaitingForCreation, DeletionPoll',
    proxy: live({ deletionRequestedAt: now }),
    obs: obs({ instance: found('Provisioning', null) }),
    result: { ok: true, deleteOutcome: 'not-ready' },
    branch: 'delete/instance/not-ready',
    action: 'delete',
    requeue: 'after',
    requeueMs: iv.DeletionPoll,
    phase: 'Deleting',
    reason: 'DeletionWaitingForCreation',
    ip: null,
  },
  {
    arm: 'delete, provider gone → PermanentError, document kept',
    proxy: live({ deletionRequestedAt: now }),
    obs: obs({ providerRegistered: false }),
    branch: 'delete/provider-missing',
    action: null,
    requeue: 'none',
    phase: 'Deleting',
    reason: 'PermanentError',
  },
  {
    arm: 'delete, transient provider error → error (Pub/Sub backoff)',
    proxy: live({ deletionRequestedAt: now }),
    obs: obs({ instance: failed('transient') }),
    branch: 'delete/observe/transient',
    action: null,
    requeue: 'error',
    phase: 'Deleting',
  },
  // §4 reconcileExternal
  {
    arm: 'external → ip from the endpoint, Provisioned=True/ExternalEndpoint, no requeue',
    proxy: aProxy({ spec: externalSpec() }),
    obs: obs({ cloudInit: null }),
    branch: 'external',
    action: null,
    requeue: 'none',
    phase: 'Provisioned',
    reason: 'ExternalEndpoint',
    ip: '203.0.113.7',
  },
  {
    arm: 'external with a healthy verdict → Ready',
    proxy: aProxy({ uid: 'uid-ext', spec: externalSpec() }),
    obs: obs({
      cloudInit: null,
      health: { instance: '203.0.113.7:8080#uid-ext', verdict: okVerdict },
    }),
    branch: 'external',
    action: null,
    requeue: 'none',
    phase: 'Ready',
  },
  // §3 reconcileManaged: guards
  {
    arm: 'permanent-failure latch at this generation → silent',
    proxy: live({ status: { conditions: [provisioned('False', 'PermanentError')] } }),
    obs: obs({ cloudInit: null }),
    branch: 'latched',
    action: null,
    requeue: 'none',
    phase: 'Failed',
    reason: 'PermanentError',
  },
  {
    arm: 'latch released by a spec edit (generation moved) → the pass proceeds',
    proxy: aProxy({
      uid,
      spec,
      generation: 2,
      status: { conditions: [provisioned('False', 'PermanentError')] },
    }),
    obs: obs(),
    result: { ok: true, providerId },
    branch: 'create',
    action: 'create',
    requeue: 'after',
    requeueMs: iv.ProvisioningPoll,
    phase: 'Provisioning',
    reason: 'Provisioning',
  },
  {
    arm: 'provider missing → PermanentError → Failed',
    proxy: aProxy({ uid, spec: managedSpec({ provider: 'aws' }) }),
    obs: obs({ providerRegistered: false, cloudInit: null }),
    branch: 'provider-missing',
    action: null,
    requeue: 'none',
    phase: 'Failed',
    reason: 'PermanentError',
  },
  {
    arm: 'cloud-init unreadable for now → error (Pub/Sub backoff)',
    proxy: aProxy({ uid, spec }),
    obs: obs({ cloudInit: { ok: false, failure: { kind: 'transient', message: 'unavailable' } } }),
    branch: 'cloud-init/transient',
    action: null,
    requeue: 'error',
    phase: 'Pending',
  },
  {
    arm: 'cloud-init secret missing → CloudInitError, backoff',
    proxy: aProxy({ uid, spec }),
    obs: obs({ cloudInit: { ok: false, failure: { kind: 'invalid', message: 'secret ci not found' } } }),
    branch: 'cloud-init/error',
    action: null,
    requeue: 'after',
    requeueMs: iv.CloudInitRetryMin,
    phase: 'Pending',
    reason: 'CloudInitError',
  },
  {
    arm: 'cloud-init failing for an hour → backoff as long, capped',
    proxy: aProxy({ uid, spec, status: { conditions: [provisioned('False', 'CloudInitError')] } }),
    obs: obs({ cloudInit: { ok: false, failure: { kind: 'invalid', message: 'secret ci not found' } } }),
    branch: 'cloud-init/error',
    action: null,
    requeue: 'after',
    requeueMs: iv.CloudInitRetryMax,
    phase: 'Pending',
    reason: 'CloudInitError',
  },
  {
    arm: 'the spec cannot produce a cloud-init → PermanentError, latched',
    proxy: aProxy({ uid, spec }),
    obs: obs({ cloudInit: { ok: false, failure: { kind: 'spec', message: 'needs credentialsRef' } } }),
    branch: 'cloud-init/spec',
    action: null,
    requeue: 'none',
    phase: 'Failed',
    reason: 'PermanentError',
  },
  {
    arm: 'credentials rotated (new secret version) → hash changed → replace',
    proxy: live(),
    obs: obs({
      cloudInit: {
        ok: true,
        script: '#!/bin/sh\necho hi',
        digest,
        credentialsSecret: 'projects/p/secrets/c/versions/8',
      },
      instance: found('Running'),
    }),
    branch: 'replace/delete',
    action: 'delete',
    requeue: 'after',
    requeueMs: iv.DeletionPoll,
    phase: 'Provisioning',
    reason: 'Replacing',
  },
  // §3: create / adopt / replace
  {
    arm: 'no providerID → prov.Create, stage providerID + hash, ProvisioningPoll',
    proxy: aProxy({ uid, spec }),
    obs: obs(),
    result: { ok: true, providerId },
    branch: 'create',
    action: 'create',
    requeue: 'after',
    requeueMs: iv.ProvisioningPoll,
    phase: 'Provisioning',
    reason: 'Provisioning',
    providerId,
  },
  {
    arm: 'create hits quota → QuotaExceeded, QuotaRetry, nothing staged',
    proxy: aProxy({ uid, spec }),
    obs: obs(),
    result: { ok: false, failure: { kind: 'quota', message: 'QUOTA_EXCEEDED' } },
    branch: 'create/quota',
    action: null,
    requeue: 'after',
    requeueMs: iv.QuotaRetry,
    phase: 'Pending',
    reason: 'QuotaExceeded',
    providerId: null,
  },
  {
    arm: 'create fails permanently → Failed, latched',
    proxy: aProxy({ uid, spec }),
    obs: obs(),
    result: { ok: false, failure: { kind: 'permanent', message: 'bad machine type' } },
    branch: 'create/permanent',
    action: null,
    requeue: 'none',
    phase: 'Failed',
    reason: 'PermanentError',
  },
  {
    arm: 'create fails transiently → error',
    proxy: aProxy({ uid, spec }),
    obs: obs(),
    result: { ok: false, failure: { kind: 'transient', message: '503' } },
    branch: 'create/transient',
    action: null,
    requeue: 'error',
    phase: 'Pending',
  },
  {
    arm: 'annotation empty → adopt: record the hash, RequeueNow',
    proxy: live({ status: { specHash: '' } }),
    obs: obs({ instance: found('Running') }),
    branch: 'adopt',
    action: null,
    requeue: 'now',
    phase: 'Provisioning',
  },
  {
    arm: 'hash changed, instance exists → prov.Delete, Replacing, DeletionPoll',
    proxy: live({ status: { specHash: '0000000000000000' } }),
    obs: obs({ instance: found('Running') }),
    branch: 'replace/delete',
    action: 'delete',
    requeue: 'after',
    requeueMs: iv.DeletionPoll,
    phase: 'Provisioning',
    reason: 'Replacing',
    ip: null,
  },
  {
    arm: 'hash changed, instance still being created → prov.Delete refused (not-ready), Replacing, DeletionPoll',
    proxy: live({ status: { specHash: '0000000000000000' } }),
    obs: obs({ instance: found('Provisioning', null) }),
    result: { ok: true, deleteOutcome: 'not-ready' },
    branch: 'replace/delete/not-ready',
    action: 'delete',
    requeue: 'after',
    requeueMs: iv.DeletionPoll,
    phase: 'Provisioning',
    reason: 'Replacing',
    ip: null,
  },
  {
    arm: 'hash changed, instance gone → record hash, clear ID/IP, RequeueNow',
    proxy: live({ status: { specHash: '0000000000000000' } }),
    obs: obs({ instance: missing }),
    branch: 'replace/gone',
    action: null,
    requeue: 'now',
    phase: 'Pending',
    ip: null,
    providerId: null,
  },
  // §3: hash equal → prov.Get
  {
    arm: 'NotFound → clear ID/IP, RequeueNow',
    proxy: live(),
    obs: obs({ instance: missing }),
    branch: 'instance-missing',
    action: null,
    requeue: 'now',
    phase: 'Pending',
    ip: null,
    providerId: null,
  },
  {
    arm: 'NotFound because the create failed on quota (async) → QuotaExceeded, QuotaRetry',
    proxy: live(),
    obs: obs({ instance: { kind: 'missing', createFailure: { kind: 'quota', message: 'QUOTA_EXCEEDED' } } }),
    branch: 'instance-missing/quota',
    action: null,
    requeue: 'after',
    requeueMs: iv.QuotaRetry,
    phase: 'Pending',
    reason: 'QuotaExceeded',
    providerId: null,
  },
  {
    arm: 'NotFound because the create was throttled (async, transient) → cleared, created again after 2–4 ProvisioningPolls',
    proxy: live(),
    obs: obs({
      instance: {
        kind: 'missing',
        createFailure: { kind: 'transient', message: 'RESOURCE_OPERATION_RATE_EXCEEDED' },
      },
    }),
    branch: 'instance-missing/transient',
    action: null,
    requeue: 'after',
    requeueMs: expect.toSatisfy(
      (ms: number) => ms >= 2 * iv.ProvisioningPoll && ms < 4 * iv.ProvisioningPoll,
    ),
    phase: 'Pending',
    ip: null,
    providerId: null,
  },
  {
    arm: 'Provisioning → Provisioned=False, ProvisioningPoll',
    proxy: live({ status: { ip: null } }),
    obs: obs({ instance: found('Provisioning', null) }),
    branch: 'provisioning',
    action: null,
    requeue: 'after',
    requeueMs: iv.ProvisioningPoll,
    phase: 'Provisioning',
    reason: 'Provisioning',
  },
  {
    arm: 'Running → ip, Provisioned=True/Created, DriftPoll',
    proxy: live({ status: { ip: null } }),
    obs: obs({ instance: found('Running', '10.0.0.42') }),
    branch: 'running',
    action: null,
    requeue: 'drift',
    phase: 'Provisioned',
    reason: 'Created',
    ip: '10.0.0.42',
  },
  {
    arm: 'Running with an unhealthy verdict → Unhealthy',
    proxy: live({ status: { conditions: [provisioned('True', 'Created')] } }),
    obs: obs({
      instance: found('Running'),
      health: {
        instance: `${providerId}@${earlier.toISOString()}`,
        verdict: {
          healthy: false,
          latencyMillis: null,
          checkedAt: now,
          reason: 'ProbeFailed',
          message: 'timeout',
          unreachableRoutes: [],
        },
      },
    }),
    branch: 'running',
    action: null,
    requeue: 'drift',
    phase: 'Unhealthy',
  },
  {
    arm: 'Stopped → prov.Delete (cattle), DeletionPoll',
    proxy: live(),
    obs: obs({ instance: found('Stopped') }),
    branch: 'stopped',
    action: 'delete',
    requeue: 'after',
    requeueMs: iv.DeletionPoll,
    phase: 'Provisioning',
    reason: 'Replacing',
    ip: null,
  },
  {
    arm: 'Terminated → prov.Delete (cattle), DeletionPoll',
    proxy: live(),
    obs: obs({ instance: found('Terminated') }),
    branch: 'stopped',
    action: 'delete',
    requeue: 'after',
    requeueMs: iv.DeletionPoll,
    phase: 'Provisioning',
    reason: 'Replacing',
  },
  {
    arm: 'instance built from another spec (its label) → replaced',
    proxy: live(),
    obs: obs({ instance: found('Running', '10.0.0.9', 'ffffffffffffffff') }),
    branch: 'stale/delete',
    action: 'delete',
    requeue: 'after',
    requeueMs: iv.DeletionPoll,
    phase: 'Provisioning',
    reason: 'Replacing',
  },
  // §3: providerFailure on observation
  {
    arm: 'prov.Get quota error → QuotaExceeded, QuotaRetry',
    proxy: live(),
    obs: obs({ instance: failed('quota') }),
    branch: 'observe/quota',
    action: null,
    requeue: 'after',
    requeueMs: iv.QuotaRetry,
    phase: 'Provisioning',
    reason: 'QuotaExceeded',
  },
  {
    arm: 'prov.Get permanent error → PermanentError, Failed, no retry',
    proxy: live(),
    obs: obs({ instance: failed('permanent') }),
    branch: 'observe/permanent',
    action: null,
    requeue: 'none',
    phase: 'Failed',
    reason: 'PermanentError',
  },
  {
    arm: 'prov.Get transient error → error',
    proxy: live(),
    obs: obs({ instance: failed('transient') }),
    branch: 'observe/transient',
    action: null,
    requeue: 'error',
    phase: 'Provisioning',
  },
  {
    arm: 'Stopped, but the delete hits quota → QuotaExceeded, instance kept',
    proxy: live(),
    obs: obs({ instance: found('Stopped') }),
    result: { ok: false, failure: { kind: 'quota', message: 'rate' } },
    branch: 'stopped/quota',
    action: null,
    requeue: 'after',
    requeueMs: iv.QuotaRetry,
    phase: 'Provisioning',
    reason: 'QuotaExceeded',
    providerId,
  },
];

describe('reconcile: one row per arm of the seed §3/§4', () => {
  it.each(rows)('$arm', (row) => {
    let plan = reconcile(row.proxy, row.obs, iv);
    const actionKind = plan.action?.kind ?? null;
    if (row.result) plan = settle(row.proxy, plan, row.result, row.obs, iv);
    expect(plan.branch).toBe(row.branch);
    expect(row.result && !row.result.ok ? plan.action : actionKind).toBe(row.action);
    expect(plan.requeue.kind).toBe(row.requeue);
    if (row.requeueMs !== undefined) expect(plan.requeue).toEqual({ kind: 'after', ms: row.requeueMs });
    const status = finalizeStatus(row.proxy, plan.status, plan.requeue, now);
    expect(status.phase).toBe(row.phase);
    expect(status.observedGeneration).toBe(row.proxy.generation);
    if (row.reason) expect(status.conditions.find((c) => c.type === 'Provisioned')?.reason).toBe(row.reason);
    if (row.ip !== undefined) expect(status.ip).toBe(row.ip);
    if (row.providerId !== undefined) expect(status.providerId).toBe(row.providerId);
  });
});

describe('reconcile: details the table does not show', () => {
  // A create that fails inside its Operation and is classed transient is tried again every few polls; what
  // GCE said was written nowhere (the pass log carries the branch only), so one failing for good showed
  // only "not found: creating it".
  it("says why the instance's last create failed when it creates it again", () => {
    const plan = reconcile(
      live(),
      obs({
        instance: {
          kind: 'missing',
          createFailure: {
            kind: 'transient',
            message: 'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: try later',
          },
        },
      }),
      iv,
    );
    const provisioned = plan.status.conditions.find((c) => c.type === 'Provisioned');
    expect(provisioned?.message).toContain(
      'its last create failed (ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: try later): creating it again',
    );
  });

  // Transient create refusals that do not go away (actAs removed for good: SERVICE_ACCOUNT_ACCESS_DENIED in
  // the insert's Operation) re-created every proxy every 2–4 polls for ever, a fleet's inserts running
  // into the rate limit they then kept exceeded. Each wait is half the time the proxy has been without an
  // instance, up to 60–120 polls.
  it('creates again sooner after a first transient failure than after an hour of them', () => {
    const refused = obs({
      instance: {
        kind: 'missing',
        createFailure: { kind: 'transient', message: 'SERVICE_ACCOUNT_ACCESS_DENIED' },
      },
    });
    const requeueOf = (p: ProxyResource) => reconcile(p, refused, iv).requeue;
    const first = requeueOf(live());
    const hourLong = requeueOf(live({ status: { conditions: [provisioned('False', 'Provisioning')] } }));
    expect(first).toMatchObject({ kind: 'after' });
    expect(hourLong).toMatchObject({ kind: 'after' });
    const ms = (r: Plan['requeue']) => (r.kind === 'after' ? r.ms : Number.NaN);
    expect(ms(first)).toBeLessThan(4 * iv.ProvisioningPoll);
    expect(ms(hourLong)).toBeGreaterThanOrEqual(60 * iv.ProvisioningPoll);
    expect(ms(hourLong)).toBeLessThan(120 * iv.ProvisioningPoll);
  });

  // An instance that stays PENDING (GCE waiting for capacity), STAGING or REPAIRING was looked at every
  // 5 s for as long as it lasted: a pass, an instances.get and a status write each time.
  it('looks at a booting instance every ProvisioningPoll at first, then less often, at most every minute', () => {
    // Seen booting by an earlier pass `ms` ago (the condition this arm writes).
    const since = (ms: number): Condition => ({
      ...provisioned('False', 'Provisioning'),
      message: 'instance is booting',
      lastTransitionTime: new Date(now.getTime() - ms),
    });
    const pollOf = (conditions: Condition[]) => {
      const plan = reconcile(
        live({ status: { ip: null, conditions } }),
        obs({ instance: found('Provisioning', null) }),
        iv,
      );
      expect(plan.branch).toBe('provisioning');
      return plan.requeue.kind === 'after' ? plan.requeue.ms : Number.NaN;
    };
    expect(pollOf([])).toBe(iv.ProvisioningPoll);
    // A restart of a serving instance: booting since this pass, not since Provisioned last turned True.
    expect(pollOf([{ ...provisioned('True', 'Created') }])).toBe(iv.ProvisioningPoll);
    expect(pollOf([since(40_000)])).toBe(iv.ProvisioningPoll);
    expect(pollOf([since(3 * 60_000)])).toBe(18_000);
    expect(pollOf([since(60 * 60_000)])).toBe(12 * iv.ProvisioningPoll);
    // An hour without an instance (quota refused, then created at last): its boot is a new one, looked at
    // every ProvisioningPoll, not once a minute.
    const createdNow = obs({
      instance: {
        kind: 'found',
        instance: {
          providerId,
          state: 'Provisioning',
          ip: null,
          specHash: hash,
          createdAt: new Date(now.getTime() - 20_000),
        },
      } as InstanceObservation,
    });
    const quota = {
      ...provisioned('False', 'QuotaExceeded'),
      lastTransitionTime: new Date(now.getTime() - 3_600_000),
    };
    const plan = reconcile(live({ status: { ip: null, conditions: [quota] } }), createdNow, iv);
    expect(plan.requeue).toEqual({ kind: 'after', ms: iv.ProvisioningPoll });
    expect(plan.bootingMs).toBe(0);
    // An old instance (no creation time to bound it) booting again after hours of another False (a
    // cloud-init error): counted from this pass, which stamps the condition; the next pass counts from it.
    const cloudInit = { ...provisioned('False', 'CloudInitError'), lastTransitionTime: earlier };
    const again = reconcile(
      live({ status: { ip: null, conditions: [cloudInit] } }),
      obs({ instance: found('Provisioning', null) }),
      iv,
    );
    expect(again.bootingMs).toBe(0);
    const stamped = again.status.conditions.find((c) => c.type === 'Provisioned');
    expect(stamped).toMatchObject({ message: 'instance is booting', lastTransitionTime: now });
    // Seen booting before: its condition is kept as it was (no new stamp), and counts.
    const kept = reconcile(
      live({ status: { ip: null, conditions: [since(25 * 60_000)] } }),
      obs({ instance: found('Provisioning', null) }),
      iv,
    );
    expect(kept.bootingMs).toBe(25 * 60_000);
    expect(kept.status.conditions.find((c) => c.type === 'Provisioned')?.lastTransitionTime).toEqual(
      new Date(now.getTime() - 25 * 60_000),
    );
  });

  it('creates with the deterministic name, the hash and the resolved cloud-init', () => {
    const credentialsSecret = 'projects/p/secrets/c/versions/3';
    const cloudInit = { ok: true as const, script: '#!/bin/sh\necho hi', digest, credentialsSecret };
    const plan = reconcile(
      aProxy({ uid, spec: managedSpec({ credentialsRef: { secret: 'c' } }) }),
      obs({ cloudInit }),
      iv,
    );
    expect(plan.action).toMatchObject({
      kind: 'create',
      request: {
        name: instanceNameFromUid(uid),
        uid,
        proxyName: 'proxy-a',
        startupScript: '#!/bin/sh\necho hi',
        credentialsSecret,
      },
    });
  });

  it('a delete refused while the instance is being created says so, the same on every poll; taken, it says deleting', () => {
    const deleting = live({ deletionRequestedAt: earlier });
    const provisioned = (p: Plan) => p.status.conditions.find((c) => c.type === 'Provisioned');
    const instance = found('Provisioning', null);
    const refused = (at: Date, proxy: ProxyResource) =>
      settle(
        proxy,
        reconcile(proxy, obs({ now: at, instance }), iv),
        { ok: true, deleteOutcome: 'not-ready' },
        { now: at },
        iv,
      );
    const first = refused(now, deleting);
    expect(provisioned(first)).toMatchObject({
      status: 'False',
      reason: 'DeletionWaitingForCreation',
      message: "waiting for the instance's creation to finish before deleting it",
    });
    // The next poll, refused again: only the due time moves (the condition, its transition time included,
    // stays as written).
    const written = live({
      deletionRequestedAt: earlier,
      status: finalizeStatus(deleting, first.status, first.requeue, now),
    });
    const later = new Date(now.getTime() + iv.DeletionPoll);
    const second = refused(later, written);
    const next = finalizeStatus(written, second.status, second.requeue, later);
    expect(next).toEqual({ ...written.status, nextReconcileAt: new Date(later.getTime() + iv.DeletionPoll) });
    // Taken: the status says the delete is under way.
    const taken = settle(
      written,
      reconcile(written, obs({ now: later, instance }), iv),
      { ok: true, deleteOutcome: 'deleting' },
      { now: later },
      iv,
    );
    expect(taken.branch).toBe('delete/instance');
    expect(provisioned(taken)).toMatchObject({ reason: 'Deleting', message: 'deleting the instance' });
  });

  it('a delete refused while GCE holds the creation asks again less often as the hold lasts (up to a minute)', () => {
    // GCE can keep an insert un-DONE for hours (PENDING for capacity): every 5 s cost two gets, a delete,
    // a status write and a publish each time, a fleet's worth when a stalled fleet is deleted or re-specced.
    const heldFor = (ms: number): InstanceObservation => {
      const f = found('Provisioning', null) as Extract<InstanceObservation, { kind: 'found' }>;
      return { kind: 'found', instance: { ...f.instance, createdAt: new Date(now.getTime() - ms) } };
    };
    const refusedAfter = (proxy: ProxyResource, ms: number) => {
      const o = obs({ instance: heldFor(ms) });
      return settle(proxy, reconcile(proxy, o, iv), { ok: true, deleteOutcome: 'not-ready' }, o, iv).requeue;
    };
    const deleting = live({ deletionRequestedAt: earlier });
    const replacing = live({ status: { specHash: '0000000000000000' } });
    for (const proxy of [deleting, replacing]) {
      expect(refusedAfter(proxy, 20_000)).toEqual({ kind: 'after', ms: iv.DeletionPoll });
      expect(refusedAfter(proxy, 5 * 60_000)).toEqual({ kind: 'after', ms: 30_000 });
      expect(refusedAfter(proxy, 3 * 3600_000)).toEqual({ kind: 'after', ms: 60_000 });
    }
    // Taken, the delete polls at DeletionPoll again: only a refusal backs off.
    const o = obs({ instance: heldFor(3 * 3600_000) });
    expect(
      settle(deleting, reconcile(deleting, o, iv), { ok: true, deleteOutcome: 'deleting' }, o, iv).requeue,
    ).toEqual({
      kind: 'after',
      ms: iv.DeletionPoll,
    });
  });

  it('a replacement whose delete is refused while the instance is being created keeps its reason, and says it waits', () => {
    const proxy = live({ status: { specHash: '0000000000000000' } });
    const plan = settle(
      proxy,
      reconcile(proxy, obs({ instance: found('Provisioning', null) }), iv),
      { ok: true, deleteOutcome: 'not-ready' },
      { now },
      iv,
    );
    expect(plan.status.conditions.find((c) => c.type === 'Provisioned')).toMatchObject({
      reason: 'Replacing',
      message: 'spec changed: deleting the old instance once its creation has finished',
    });
  });

  it('a steady Running proxy stages an identical status: zero writes', () => {
    const first = reconcile(live({ status: { ip: null } }), obs({ instance: found('Running') }), iv);
    const written = finalizeStatus(live(), first.status, first.requeue, now);
    const steady = live({ status: written });
    const again = reconcile(
      steady,
      obs({ now: new Date(now.getTime() + 60_000), instance: found('Running') }),
      iv,
    );
    const next = finalizeStatus(steady, again.status, again.requeue, new Date(now.getTime() + 60_000));
    expect(statusChanged(steady.status, next)).toBe(false);
  });

  it('a CloudInitError after another Provisioned=False reason backs off from its own start, not the earlier one', () => {
    // Provisioned=False (Provisioning) for an hour already, then the secret goes missing: the first pass
    // waits the floor, the next one as long as the error has lasted — not the hour of the earlier reason.
    const ci: Observation['cloudInit'] = {
      ok: false,
      failure: { kind: 'invalid', message: 'secret ci not found' },
    };
    const provisioning = aProxy({
      uid,
      spec,
      status: { conditions: [provisioned('False', 'Provisioning')] },
    });
    const first = reconcile(provisioning, obs({ cloudInit: ci }), iv);
    expect(first.requeue).toEqual({ kind: 'after', ms: iv.CloudInitRetryMin });
    const written = finalizeStatus(provisioning, first.status, first.requeue, now);
    const later = new Date(now.getTime() + 25_000);
    const second = reconcile(aProxy({ uid, spec, status: written }), obs({ now: later, cloudInit: ci }), iv);
    expect(second.requeue).toEqual({ kind: 'after', ms: 25_000 });
    // the error's start stays where the first pass put it
    const since = (st: typeof written) =>
      st.conditions.find((c) => c.type === 'Provisioned')?.lastTransitionTime;
    expect(since(written)).toEqual(now);
    expect(since(second.status)).toEqual(now);
  });

  it('a latched proxy stays latched without a write, and the latch asks for no observation', () => {
    const latched = live({
      status: {
        phase: 'Failed',
        observedGeneration: 1,
        conditions: [provisioned('False', 'PermanentError')],
      },
    });
    expect(observationNeeds(latched, true)).toEqual({ cloudInit: false, instance: false });
    const plan = reconcile(latched, obs({ cloudInit: null }), iv);
    expect(statusChanged(latched.status, finalizeStatus(latched, plan.status, plan.requeue, now))).toBe(
      false,
    );
  });

  it('a manual request retries a latched proxy once: observed and created again, latched again if refused', () => {
    const latched = aProxy({
      uid,
      spec,
      status: {
        phase: 'Failed',
        observedGeneration: 1,
        conditions: [provisioned('False', 'PermanentError')],
      },
    });
    expect(observationNeeds(latched, true, true)).toEqual({ cloudInit: true, instance: false });
    const retry = obs({ retryLatched: true, instance: null });
    const plan = reconcile(latched, retry, iv);
    expect(plan).toMatchObject({ branch: 'create', action: { kind: 'create' } });
    const created = settle(latched, plan, { ok: true, providerId }, retry, iv);
    expect(finalizeStatus(latched, created.status, created.requeue, now).phase).toBe('Provisioning');
    const refused = settle(
      latched,
      plan,
      { ok: false, failure: { kind: 'permanent', message: 'no' } },
      retry,
      iv,
    );
    expect(refused.requeue).toEqual({ kind: 'none' });
    expect(finalizeStatus(latched, refused.status, refused.requeue, now).phase).toBe('Failed');
  });

  it('RequeueNow stores a due time past the pass that follows in-process, not now (the sweep would copy it)', () => {
    const gone = reconcile(live(), obs({ instance: missing }), iv);
    expect(gone.requeue).toEqual({ kind: 'now' });
    const due = finalizeStatus(live(), gone.status, gone.requeue, now).nextReconcileAt!;
    expect(due.getTime()).toBeGreaterThan(now.getTime());
    expect(due).toEqual(new Date(now.getTime() + SAFETY_NET_MS));
  });

  it.each<[string, ProxyResource, boolean, { cloudInit: boolean; instance: boolean }]>([
    ['new managed', aProxy({ uid, spec }), true, { cloudInit: true, instance: false }],
    ['live managed', live(), true, { cloudInit: true, instance: true }],
    ['external', aProxy({ spec: externalSpec() }), true, { cloudInit: false, instance: false }],
    ['deleting', live({ deletionRequestedAt: now }), true, { cloudInit: false, instance: true }],
    ['provider missing', live(), false, { cloudInit: false, instance: false }],
  ])('observationNeeds: %s', (_label, proxy, registered, needs) => {
    expect(observationNeeds(proxy, registered)).toEqual(needs);
  });

  it('keeps lastTransitionTime while a condition keeps its status', () => {
    const p = live({ status: { conditions: [provisioned('True', 'Created')] } });
    const plan = reconcile(p, obs({ instance: found('Running') }), iv);
    expect(plan.status.conditions[0]?.lastTransitionTime).toEqual(earlier);
    const flipped = reconcile(p, obs({ instance: found('Provisioning') }), iv);
    expect(flipped.status.conditions[0]?.lastTransitionTime).toEqual(now);
  });
});

describe('reconcile: an external proxy whose endpoint was edited', () => {
  const uid = 'uid-ext';
  const healthyAt = (host: string, port: number, protocol = 'http'): ProxyResource =>
    aProxy({
      uid,
      generation: 2,
      spec: externalSpec({ endpoint: { host, port, protocol } }),
      status: {
        phase: 'Ready',
        observedGeneration: 1,
        ip: '203.0.113.7',
        conditions: [
          provisioned('True', 'ExternalEndpoint'),
          { ...provisioned('True', 'ProbeSucceeded'), type: 'Healthy' },
        ],
        latencyMillis: 12,
        lastHealthCheckTime: earlier,
      },
    });
  const about = (address: string) =>
    obs({ cloudInit: null, health: { instance: `${address}#${uid}`, verdict: okVerdict } });

  it.each<[string, ProxyResource, Observation]>([
    ['another host', healthyAt('198.51.100.9', 8080), about('203.0.113.7:8080')],
    ['another host, the probe has no state yet', healthyAt('198.51.100.9', 8080), obs({ cloudInit: null })],
    ['another port', healthyAt('203.0.113.7', 9090), about('203.0.113.7:8080')],
    // The same address spoken to in SOCKS5 is another proxy: the HTTP verdict says nothing of it.
    ['another protocol', healthyAt('203.0.113.7', 8080, 'socks5'), about('203.0.113.7:8080')],
    [
      'another port, the probe reset for it and has no verdict yet',
      healthyAt('203.0.113.7', 9090),
      obs({ cloudInit: null, health: { instance: `203.0.113.7:9090#${uid}`, verdict: null } }),
    ],
  ])('moved to %s: the old Healthy, latency and check time go, so it is not Ready', (_l, proxy, o) => {
    const plan = reconcile(proxy, o, iv);
    const status = finalizeStatus(proxy, plan.status, plan.requeue, now);
    expect(status.conditions.map((c) => c.type)).toEqual(['Provisioned']);
    expect(status).toMatchObject({
      phase: 'Provisioned',
      ip: proxy.spec.mode === 'external' ? proxy.spec.endpoint.host : null,
      latencyMillis: null,
      lastHealthCheckTime: null,
    });
  });

  it('the Provisioned message names a SOCKS5 endpoint by its scheme', () => {
    const proxy = healthyAt('203.0.113.7', 1080, 'socks5');
    const plan = reconcile(proxy, obs({ cloudInit: null }), iv);
    const provisioned = plan.status.conditions.find((c) => c.type === 'Provisioned');
    expect(provisioned?.message).toBe('external endpoint socks5://203.0.113.7:1080');
  });

  it('the Provisioned message brackets an IPv6 endpoint, whose port would read as part of it', () => {
    const proxy = healthyAt('2001:db8::1', 3128, 'http');
    const plan = reconcile(proxy, obs({ cloudInit: null }), iv);
    const provisioned = plan.status.conditions.find((c) => c.type === 'Provisioned');
    expect(provisioned?.message).toBe('external endpoint [2001:db8::1]:3128');
  });

  it("takes the probe's verdict about the new endpoint once it has one", () => {
    const proxy = healthyAt('203.0.113.7', 9090);
    const plan = reconcile(proxy, about('203.0.113.7:9090'), iv);
    expect(finalizeStatus(proxy, plan.status, plan.requeue, now)).toMatchObject({
      phase: 'Ready',
      latencyMillis: 12,
      lastHealthCheckTime: now,
    });
  });

  it('a spec edit that keeps the endpoint keeps the health part of the status', () => {
    const proxy = healthyAt('203.0.113.7', 8080);
    for (const o of [about('203.0.113.7:8080'), obs({ cloudInit: null })]) {
      const plan = reconcile(proxy, o, iv);
      expect(finalizeStatus(proxy, plan.status, plan.requeue, now)).toMatchObject({
        phase: 'Ready',
        latencyMillis: 12,
      });
    }
  });
});

describe('reconcile: an external proxy created under the name of a deleted one', () => {
  // health/{proxy} is keyed by name: when the old proxy is deleted and the new one created between two
  // probe ticks, nothing pruned the old one's state, and it is about the very same endpoint.
  it('takes no verdict of the deleted proxy: Provisioned until the probe has judged this one', () => {
    const deleted = aProxy({ uid: 'uid-old', spec: externalSpec(), status: { ip: '203.0.113.7' } });
    const created = aProxy({ uid: 'uid-new', spec: externalSpec() });
    const o = obs({ cloudInit: null, health: { instance: healthInstanceKey(deleted), verdict: okVerdict } });
    const plan = reconcile(created, o, iv);
    const status = finalizeStatus(created, plan.status, plan.requeue, now);
    expect(status.conditions.map((c) => c.type)).toEqual(['Provisioned']);
    expect(status).toMatchObject({ phase: 'Provisioned', ip: '203.0.113.7', latencyMillis: null });
  });
});

describe('reconcile: a managed instance replaced by one of the same name', () => {
  // The probe's state of the instance that ran since `earlier` (instance names derive from the UID, so
  // the replacement has the same providerId).
  const oldVerdict = obs({
    health: { instance: `${providerId}@${earlier.toISOString()}`, verdict: okVerdict },
  });

  it('the first Running pass of the new instance takes no verdict: Provisioned, not Ready', () => {
    // Recreated: the create arm left Provisioned=False, the Healthy condition went with the old instance.
    const recreated = live({
      status: { ip: null, conditions: [provisioned('False', 'Provisioning')], latencyMillis: null },
    });
    const plan = reconcile(recreated, { ...oldVerdict, instance: found('Running', '10.0.0.50') }, iv);
    const status = finalizeStatus(recreated, plan.status, plan.requeue, now);
    expect(status.conditions.map((c) => c.type)).toEqual(['Provisioned']);
    expect(status).toMatchObject({ phase: 'Provisioned', ip: '10.0.0.50', latencyMillis: null });
    // Its key is new: the old instance's counters do not carry over (instance-key.ts).
    expect(healthInstanceKey({ uid: recreated.uid, spec, status })).toBe(
      `${providerId}@${now.toISOString()}`,
    );
  });

  /** A running proxy Ready on the probe's verdict about its instance. */
  const readyOnOldVerdict = (): ProxyResource => {
    const ready = live({ status: { conditions: [provisioned('True', 'Created')] } });
    const plan = reconcile(ready, { ...oldVerdict, instance: found('Running') }, iv);
    const before = { ...ready, status: finalizeStatus(ready, plan.status, { kind: 'drift' }, now) };
    expect(before.status.phase).toBe('Ready');
    return before;
  };

  it('an instance booting again (GCE restarting it after a host event) drops its verdict: Provisioned until judged', () => {
    const before = readyOnOldVerdict();
    const staging = reconcile(before, { ...oldVerdict, instance: found('Provisioning') }, iv);
    const booting = { ...before, status: finalizeStatus(before, staging.status, staging.requeue, now) };
    expect(booting.status.conditions.map((c) => c.type)).toEqual(['Provisioned']);
    expect(booting.status).toMatchObject({ phase: 'Provisioning', latencyMillis: null });
    const later = new Date(now.getTime() + 60_000);
    const running = reconcile(booting, { ...oldVerdict, now: later, instance: found('Running') }, iv);
    expect(finalizeStatus(booting, running.status, running.requeue, later).phase).toBe('Provisioned');
  });

  it('an instance restarted between two passes (a new address) drops its verdict: Provisioned until judged at it', () => {
    // GCE gives a stopped-and-started VM a new ephemeral address; a drift pass minutes later sees it
    // Running again. The verdict was the probe's about the old address, which another VM may have now.
    const before = readyOnOldVerdict();
    const later = new Date(now.getTime() + iv.DriftPoll);
    const plan = reconcile(
      before,
      { ...oldVerdict, now: later, instance: found('Running', '10.0.0.77') },
      iv,
    );
    const moved = { ...before, status: finalizeStatus(before, plan.status, plan.requeue, later) };
    expect(moved.status.conditions.map((c) => c.type)).toEqual(['Provisioned']);
    expect(moved.status).toMatchObject({ phase: 'Provisioned', ip: '10.0.0.77', latencyMillis: null });
    expect(moved.status.conditions[0]).toMatchObject({ status: 'True', lastTransitionTime: later });
    // A new incarnation key: the old verdict is not folded again on the next pass either, …
    expect(healthInstanceKey(moved)).toBe(`${providerId}@${later.toISOString()}`);
    const again = reconcile(
      moved,
      { ...oldVerdict, now: later, instance: found('Running', '10.0.0.77') },
      iv,
    );
    expect(statusChanged(moved.status, finalizeStatus(moved, again.status, again.requeue, later))).toBe(
      false,
    );
    // … and a verdict under it is.
    const judged = obs({ now: later, health: { instance: healthInstanceKey(moved), verdict: okVerdict } });
    const ok = reconcile(moved, { ...judged, instance: found('Running', '10.0.0.77') }, iv);
    expect(finalizeStatus(moved, ok.status, ok.requeue, later).phase).toBe('Ready');
  });

  it('a VM that ran on through a latched PermanentError comes back Provisioned, not Ready on its verdict from before', () => {
    // A PUT dropped credentialsRef (no cloud-init from this spec: latched, the VM left running); the probe
    // skips a proxy whose Provisioned is False. The next PUT restores the spec: the same hash, the VM still
    // running — but nothing judged it meanwhile, and Provisioned turning True starts a new key.
    const before = readyOnOldVerdict();
    const broken = { ...before, generation: 2 };
    const latch = reconcile(
      broken,
      {
        ...oldVerdict,
        cloudInit: { ok: false, failure: { kind: 'spec', message: 'needs credentialsRef' } },
        instance: found('Running'),
      },
      iv,
    );
    expect(latch.branch).toBe('cloud-init/spec');
    const latched = { ...broken, status: finalizeStatus(broken, latch.status, latch.requeue, now) };
    expect(latched.status.phase).toBe('Failed');
    const later = new Date(now.getTime() + 3_600_000);
    const restored = { ...latched, generation: 3 };
    const plan = reconcile(restored, { ...oldVerdict, now: later, instance: found('Running') }, iv);
    const status = finalizeStatus(restored, plan.status, plan.requeue, later);
    expect(plan.branch).toBe('running');
    expect(status.conditions.map((c) => c.type)).toEqual(['Provisioned']);
    expect(status).toMatchObject({ phase: 'Provisioned', latencyMillis: null, lastHealthCheckTime: null });
  });

  it('the instance that kept running keeps folding its own verdicts', () => {
    const steady = live({ status: { conditions: [provisioned('True', 'Created')] } });
    const plan = reconcile(steady, { ...oldVerdict, instance: found('Running') }, iv);
    expect(finalizeStatus(steady, plan.status, plan.requeue, now).phase).toBe('Ready');
  });

  it.each<[string, ProxyResource, Observation]>([
    [
      'spec change',
      live({ spec: managedSpec({ machineType: 'e2-medium' }) }),
      obs({ instance: found('Running') }),
    ],
    ['stale instance label', live(), obs({ instance: found('Running', '10.0.0.9', 'sha256:other') })],
    ['instance missing (drift)', live(), obs({ instance: missing })],
    ['preempted (Terminated)', live(), obs({ instance: found('Terminated') })],
  ])('every path to a new instance leaves Provisioned not True: %s', (_l, proxy, o) => {
    const before = { ...proxy, status: { ...proxy.status, conditions: [provisioned('True', 'Created')] } };
    let p = before;
    // Drive the arms until the create action: the incarnation key is '' from the first pass that stages
    // the replacement and the create pass stages Provisioned=False, so the next True is a new time.
    for (let i = 0; i < 4; i++) {
      const plan = reconcile(p, i === 0 ? o : obs({ instance: missing }), iv);
      p = { ...p, status: finalizeStatus(p, plan.status, plan.requeue, now) };
      if (plan.action?.kind === 'create') break;
    }
    const c = p.status.conditions.find((x) => x.type === 'Provisioned');
    expect(c?.status).toBe('False');
    expect(healthInstanceKey(p)).toBe('');
  });
});

describe('reconcile: an instance gone or stopped leaves no address and no Provisioned=True behind', () => {
  // GCE releases a stopped or deleted VM's ephemeral address, and another project's VM may get it: the
  // probe dials status.ip with the proxy's credentials, and the status would say an address that is not
  // the proxy's. Nor may a status without an instance read Provisioned=True ("instance running at …").
  const ciInvalid = obs({
    cloudInit: { ok: false, failure: { kind: 'invalid', message: 'version disabled' } },
  });
  const erroring = live({ status: { conditions: [provisioned('False', 'CloudInitError')] } });

  it.each<[string, InstanceObservation, string | null]>([
    ['terminated', found('Terminated', null), providerId],
    ['booting again', found('Provisioning', null), providerId],
    ['deleted', missing, null],
  ])('cloud-init unreadable, the instance %s: its address goes', (_l, instance, keptId) => {
    const plan = reconcile(erroring, { ...ciInvalid, instance }, iv);
    expect(plan.branch).toBe('cloud-init/error');
    expect(plan.status).toMatchObject({ ip: null, providerId: keptId });
  });

  it('a pass failing in passing: what it writes anyway for an instance not running (addressGone)', () => {
    const failure = { kind: 'transient' as const, message: 'compute unavailable' };
    const ready = live({ status: { conditions: [provisioned('True', 'Created')] } });
    const reasonOf = (s: ReturnType<typeof addressGone>) =>
      s?.conditions.find((c) => c.type === 'Provisioned')?.reason;
    expect(addressGone(ready, obs({ instance: found('Running') }), failure)).toBeNull();
    expect(
      addressGone(live({ status: { ip: null } }), obs({ instance: found('Terminated') }), failure),
    ).toBeNull();
    expect(addressGone(ready, obs({ instance: failed('transient') }), failure)).toBeNull();
    const stopped = addressGone(ready, obs({ instance: found('Terminated', null) }), failure);
    expect(stopped).toMatchObject({ ip: null, providerId });
    expect(reasonOf(stopped)).toBe('Replacing');
    expect(stopped?.conditions.find((c) => c.type === 'Provisioned')?.message).toBe(
      'instance terminated; retrying after a passing failure: compute unavailable',
    );
    expect(reasonOf(addressGone(ready, obs({ instance: found('Provisioning', null) }), failure))).toBe(
      'Provisioning',
    );
    // Running at another address: stopped and started again since; the old address was released.
    const restarted = addressGone(ready, obs({ instance: found('Running', '10.0.0.77') }), failure);
    expect(restarted).toMatchObject({ ip: null, providerId });
    expect(reasonOf(restarted)).toBe('Provisioning');
    expect(restarted?.conditions.find((c) => c.type === 'Provisioned')?.message).toBe(
      'instance restarted at another address (10.0.0.77); retrying after a passing failure: compute unavailable',
    );
    expect(addressGone(ready, obs({ instance: missing }), failure)).toMatchObject({
      ip: null,
      providerId: null,
    });
    const deleting = live({
      deletionRequestedAt: earlier,
      status: { conditions: [provisioned('True', 'Created')] },
    });
    expect(reasonOf(addressGone(deleting, obs({ instance: found('Stopped', null) }), failure))).toBe(
      'Deleting',
    );
  });

  it('cloud-init unreadable, the instance still running: it keeps its address', () => {
    const plan = reconcile(erroring, { ...ciInvalid, instance: found('Running') }, iv);
    expect(plan.status.ip).toBe('10.0.0.9');
  });

  it('a stopped instance whose delete fails for good: latched without its address', () => {
    const proxy = live({ status: { conditions: [provisioned('True', 'Created')] } });
    const o = obs({ instance: found('Terminated', null) });
    const failure = { kind: 'permanent' as const, message: 'deletion protection is on' };
    const plan = settle(proxy, reconcile(proxy, o, iv), { ok: false, failure }, o, iv);
    expect(plan.branch).toBe('stopped/permanent');
    expect(plan.status).toMatchObject({ ip: null, providerId });
    expect(plan.status.conditions.find((c) => c.type === 'Provisioned')).toMatchObject({
      status: 'False',
      reason: 'PermanentError',
    });
  });

  it('a running instance whose replacement delete fails for good keeps serving at its address', () => {
    const proxy = live({
      spec: managedSpec({ machineType: 'e2-medium' }),
      status: { conditions: [provisioned('True', 'Created')] },
    });
    const o = obs({ instance: found('Running') });
    const failure = { kind: 'permanent' as const, message: 'deletion protection is on' };
    const plan = settle(proxy, reconcile(proxy, o, iv), { ok: false, failure }, o, iv);
    expect(plan.status.ip).toBe('10.0.0.9');
  });

  it.each<[string, ProxyResource]>([
    ['instance-missing', live({ status: { conditions: [provisioned('True', 'Created')] } })],
    [
      'replace/gone',
      live({
        spec: managedSpec({ machineType: 'e2-medium' }),
        status: { conditions: [provisioned('True', 'Created')] },
      }),
    ],
  ])('%s: Provisioned goes False with the instance', (branch, proxy) => {
    const plan = reconcile(proxy, obs({ instance: missing }), iv);
    expect(plan.branch).toBe(branch);
    expect(plan.status.conditions.find((c) => c.type === 'Provisioned')?.status).toBe('False');
  });

  it('a create recorded after instance-missing without the create arm (a redelivery adopting it) takes no old verdict', () => {
    // instance-missing is written; the create pass's write is lost, and the delivery records the instance
    // it created with specHash '' (recordBeforeRetry); the redelivery adopts it and sees it Running.
    const ready = live({ status: { conditions: [provisioned('True', 'Created')] } });
    const gone = reconcile(ready, obs({ instance: missing }), iv);
    const recorded = {
      ...ready,
      status: { ...finalizeStatus(ready, gone.status, gone.requeue, now), providerId, specHash: '' },
    };
    const adopt = reconcile(recorded, obs(), iv);
    expect(adopt.branch).toBe('adopt');
    const adopted = { ...recorded, status: finalizeStatus(recorded, adopt.status, adopt.requeue, now) };
    const later = new Date(now.getTime() + 10_000);
    const oldVerdict = { instance: `${providerId}@${earlier.toISOString()}`, verdict: okVerdict };
    const run = reconcile(adopted, obs({ now: later, instance: found('Running'), health: oldVerdict }), iv);
    expect(run.branch).toBe('running');
    expect(finalizeStatus(adopted, run.status, run.requeue, later).phase).toBe('Provisioned');
  });
});

describe('reconcile: the routes a proxy is left out of (TARGET tier)', () => {
  const about = `${providerId}@${earlier.toISOString()}`;
  const steady = live({ status: { conditions: [provisioned('True', 'Created')] } });
  const pass = (proxy: ProxyResource, unreachableRoutes: string[]) => {
    const plan = reconcile(
      proxy,
      obs({
        instance: found('Running'),
        health: { instance: about, verdict: { ...okVerdict, unreachableRoutes } },
      }),
      iv,
    );
    return finalizeStatus(proxy, plan.status, plan.requeue, now);
  };

  it('folds the verdict’s routes into status; the proxy stays Ready for the others', () => {
    const status = pass(steady, ['shop', 'news']);
    expect(status).toMatchObject({ phase: 'Ready', unreachableRoutes: ['shop', 'news'] });
  });

  it('none is no field at all: a status from before the field compares equal (no write)', () => {
    const written = pass(steady, []);
    expect('unreachableRoutes' in written).toBe(false);
    const ready = live({ status: written });
    expect(statusChanged(ready.status, pass(ready, []))).toBe(false);
  });

  it('a change of routes is a status change; the same routes again are not', () => {
    const blocked = live({ status: pass(steady, ['shop']) });
    expect(statusChanged(blocked.status, pass(blocked, ['shop']))).toBe(false);
    expect(statusChanged(blocked.status, pass(blocked, []))).toBe(true);
    expect('unreachableRoutes' in pass(blocked, [])).toBe(false);
  });

  it('goes with the instance: a replacement starts with no route withheld', () => {
    const blocked = live({ status: pass(steady, ['shop']) });
    const plan = reconcile(blocked, obs({ instance: missing, health: null }), iv);
    expect(finalizeStatus(blocked, plan.status, plan.requeue, now).unreachableRoutes).toBeUndefined();
  });
});
