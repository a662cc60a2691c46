// The seed's reconcileManaged (§3), arm for arm. Pure: the handler has already observed the cloud-init
// and the instance; provider calls come back as one Action. The seed's finalizer step has no equivalent
// here: the document outlives the instance by construction (reconcileDelete deletes it last).
import { hashFraction } from '../health/due.js';
import { instanceNameFromUid } from '../instance-name.js';
import { type Condition, ConditionType, ProvisionedReason, type ProxyResource } from '../proxy.js';
import { specHash } from '../spec-hash.js';
import { cloudInitUnresolved } from './cloud-init-error.js';
import { clearHealth, clearInstance, findCondition, setProvisioned } from './conditions.js';
import { providerFailure } from './failure.js';
import { heldPollMs } from './held-poll.js';
import { type Managed, provesHealthy, servesReadableCredentials, serving } from './serving-status.js';
import type { InstanceRequest, Observation, ObservedInstance, Plan, PollIntervals } from './types.js';

/**
 * The permanent-failure latch: PermanentError recorded at the current generation → silent until a spec
 * edit, or a manual request's one attempt past it (Observation.retryLatched), which latches again if it
 * fails for good again.
 */
export function isLatched(proxy: ProxyResource): boolean {
  const c = findCondition(proxy.status, ConditionType.Provisioned);
  return c?.reason === ProvisionedReason.PermanentError && c.observedGeneration === proxy.generation;
}

/**
 * `status` with the Provisioned condition of an instance being created (False, Provisioning, "creating
 * instance <name>"): what the create arm writes, and what a delivery about to throw writes over an instance
 * it created that no status records yet (reconcile function, unrecorded-instance.ts recordBeforeRetry).
 */
export function creatingInstance(
  status: ProxyResource['status'],
  proxy: Pick<ProxyResource, 'uid' | 'generation'>,
  now: Date,
): ProxyResource['status'] {
  const message = `creating instance ${instanceNameFromUid(proxy.uid)}`;
  return setProvisioned(status, false, ProvisionedReason.Provisioning, message, proxy.generation, now);
}

export function instanceRequest(
  proxy: Managed,
  boot: { script: string; credentialsSecret: string | null },
  hash: string,
): InstanceRequest {
  const s = proxy.spec;
  return {
    name: instanceNameFromUid(proxy.uid),
    proxyName: proxy.name,
    uid: proxy.uid,
    zone: s.zone,
    machineType: s.machineType,
    image: s.image,
    port: s.port,
    protocol: s.protocol,
    startupScript: boot.script,
    credentialsSecret: boot.credentialsSecret,
    specHash: hash,
  };
}

export function reconcileManaged(proxy: Managed, obs: Observation, iv: PollIntervals): Plan {
  const { now } = obs;
  const gen = proxy.generation;
  const status = proxy.status;
  const quiet = (branch: string): Plan => ({ branch, status, action: null, requeue: { kind: 'none' } });

  if (isLatched(proxy) && !obs.retryLatched) return quiet('latched');
  if (!obs.providerRegistered) {
    const message = `provider "${proxy.spec.provider}" is not registered`;
    return {
      ...quiet('provider-missing'),
      status: setProvisioned(status, false, ProvisionedReason.PermanentError, message, gen, now),
    };
  }

  const ci = obs.cloudInit;
  if (!ci) throw new Error('reconcileManaged needs the cloud-init observation');
  if (!ci.ok) return cloudInitUnresolved(proxy, obs, iv, ci.failure);
  const hash = specHash(proxy.spec, ci.digest, ci.credentialsSecret);

  if (!status.providerId) {
    const request = instanceRequest(proxy, ci, hash);
    return {
      branch: 'create',
      // providerId is staged by settle() from the create's result.
      status: creatingInstance({ ...status, specHash: hash }, proxy, now),
      action: { kind: 'create', request },
      requeue: { kind: 'after', ms: iv.ProvisioningPoll },
    };
  }

  if (status.specHash !== hash) {
    if (status.specHash === '') {
      return {
        branch: 'adopt',
        status: { ...status, specHash: hash },
        action: null,
        requeue: { kind: 'now' },
      };
    }
    return replaceInstance(proxy, obs, iv, hash, 'replace');
  }

  const seen = obs.instance;
  if (!seen) throw new Error('reconcileManaged needs the instance observation');
  if (seen.kind === 'error') return providerFailure(proxy, status, seen.failure, now, iv, 'observe');
  if (seen.kind === 'missing') {
    // Provisioned goes False with the instance: left True ("instance running at …") it would say so until
    // a create lands — through a chain of failing creates — and a create recorded on top of it without the
    // create arm (a redelivery adopting it) would keep the old incarnation's time, so the old verdict's key.
    const cleared = setProvisioned(
      clearInstance(status, { keepProviderId: false }),
      false,
      ProvisionedReason.Provisioning,
      `instance ${status.providerId} not found: creating it`,
      gen,
      now,
    );
    // An asynchronous create failure (GCE reports quota inside the operation) surfaces here.
    if (seen.createFailure && seen.createFailure.kind !== 'transient') {
      return providerFailure(proxy, cleared, seen.createFailure, now, iv, 'instance-missing');
    }
    if (seen.createFailure) {
      // Throttled or busy (RESOURCE_OPERATION_RATE_EXCEEDED: a burst of creates from one image): created
      // again, but not in this delivery — a burst whose every proxy retried at once would keep the rate
      // exceeded. Each waits 2–4 ProvisioningPolls, spread by its uid, so the burst comes back spread out.
      // What GCE said goes in the status: a failure that keeps coming back (a name held by a leftover disk)
      // was otherwise written nowhere, the proxy re-created every few polls for good. One that keeps coming
      // back waits longer each time — half as long as Provisioned has been False (it also runs through a
      // quota or cloud-init wait before: the first creates after a long one wait minutes), up to
      // CREATE_RETRY_MAX_POLLS — so that a refusal that does not go away (actAs removed for good:
      // SERVICE_ACCOUNT_ACCESS_DENIED) does not keep a fleet's inserts, and the rate limit they run into,
      // going every few polls for ever.
      const ms = createRetryMs(status, proxy.uid, iv, now);
      return {
        branch: 'instance-missing/transient',
        status: setProvisioned(
          cleared,
          false,
          ProvisionedReason.Provisioning,
          `instance ${status.providerId} not found, its last create failed (${seen.createFailure.message}): creating it again`,
          gen,
          now,
        ),
        action: null,
        requeue: { kind: 'after', ms },
      };
    }
    return { branch: 'instance-missing', status: cleared, action: null, requeue: { kind: 'now' } };
  }

  const inst = seen.instance;
  // The instance carries the hash it was built from: a create that landed on an older instance (409
  // after a crash between create and the status write, with a spec edit in between) is replaced too.
  if (inst.specHash !== null && inst.specHash !== hash) return replaceInstance(proxy, obs, iv, hash, 'stale');

  switch (inst.state) {
    case 'Provisioning': {
      const prior = findCondition(status, ConditionType.Provisioned);
      const seenBooting = prior?.status === 'False' && prior.message === BOOTING ? prior : undefined;
      const booting = bootingMs(seenBooting, inst, now);
      // Booting — for the first time, or again (GCE restarting it after a host event, repairing it): what
      // the probe said of it before says nothing of whether it serves once Running. The verdict goes, so
      // the Running pass leaves it Provisioned until the probe judges it under its new key.
      const next = setProvisioned(
        clearHealth(status),
        false,
        ProvisionedReason.Provisioning,
        BOOTING,
        gen,
        now,
      );
      return {
        branch: 'provisioning',
        // The condition's time moves only when it flips: one False for another reason before (quota, a
        // cloud-init error, the create) is stamped again here, so that it counts the boot (bootingMs).
        status: seenBooting ? next : stampedProvisioned(next, now),
        action: null,
        requeue: { kind: 'after', ms: bootPollMs(booting, iv) },
        bootingMs: booting,
      };
    }
    case 'Running': {
      const plan: Plan = {
        branch: 'running',
        status: serving(proxy, obs, inst, ProvisionedReason.Created, `instance running at ${inst.ip}`),
        action: null,
        requeue: { kind: 'drift' },
      };
      // A replacement ends when its new instance proves healthy, not when it boots (provesHealthy).
      return provesHealthy(status, plan.status) ? { ...plan, slot: 'release' } : plan;
    }
    case 'Stopped':
    case 'Terminated':
      // Cattle: a stopped instance is deleted and the next passes create a fresh one.
      return {
        branch: 'stopped',
        status: setProvisioned(
          clearInstance(status, { keepProviderId: true }),
          false,
          ProvisionedReason.Replacing,
          `instance ${inst.state.toLowerCase()}: deleting it to create a new one`,
          gen,
          now,
        ),
        action: { kind: 'delete', providerId: inst.providerId },
        requeue: { kind: 'after', ms: iv.DeletionPoll },
      };
  }
}

/**
 * No replacement slot is free (replacement-slots.ts): the old instance keeps serving, Provisioned stays
 * True (the phase stays Ready, the proxy leasable) with reason ReplacementQueued, and the proxy asks again
 * after ReplacementRetry. The message names only the cap, so waiting costs no write per pass beyond the
 * due time.
 */
function queuedReplacement(
  proxy: Managed,
  obs: Observation,
  iv: PollIntervals,
  inst: ObservedInstance,
  limit: number,
): Plan {
  const message = `spec changed: waiting for a replacement slot (all ${limit} in use, RECONCILE_MAX_REPLACING); the old instance keeps serving`;
  return {
    branch: 'replace/queued',
    status: serving(proxy, obs, inst, ProvisionedReason.ReplacementQueued, message),
    action: null,
    requeue: { kind: 'after', ms: iv.ReplacementRetry },
  };
}

/** Whether clients can keep using the running instance while it waits for its turn (see replaceInstance). */
function keepsAccess(proxy: Managed, obs: Observation, inst: ObservedInstance): boolean {
  const ci = obs.cloudInit;
  if (!ci?.ok) return false;
  // What the spec resolves to now, or another credentials version (a rotation, another secret) as long
  // as it can be read: clients are handed the one the instance serves (status.servedCredentials).
  const same =
    proxy.spec.cloudInit === undefined &&
    inst.serves?.port === proxy.spec.port &&
    inst.serves.credentialsSecret === ci.credentialsSecret;
  return same || servesReadableCredentials(proxy, obs, inst);
}

/**
 * The seed's replaceInstance: delete, poll until gone, and only then record the new hash (next pass
 * creates). Deleting a Running instance takes a replacement slot first (plan.slot = 'take'); one that is
 * not serving (booting, stopped) costs no availability and takes none.
 */
function replaceInstance(
  proxy: Managed,
  obs: Observation,
  iv: PollIntervals,
  hash: string,
  why: string,
): Plan {
  const { now } = obs;
  const seen = obs.instance;
  if (!seen) throw new Error('replaceInstance needs the instance observation');
  if (seen.kind === 'error')
    return providerFailure(proxy, proxy.status, seen.failure, now, iv, `${why}/observe`);
  if (seen.kind === 'missing') {
    const gone = { ...clearInstance(proxy.status, { keepProviderId: false }), specHash: hash };
    return {
      branch: `${why}/gone`,
      // As in instance-missing: no instance, so not Provisioned (already False after replace/delete).
      status: setProvisioned(
        gone,
        false,
        ProvisionedReason.Replacing,
        'old instance gone: creating the new one',
        proxy.generation,
        now,
      ),
      action: null,
      requeue: { kind: 'now' },
    };
  }
  const inst = seen.instance;
  // Paced only while clients can keep using the old instance: leases, the probe and the gateway hand out
  // the spec's port and the credentials version the instance serves (status.servedCredentials), so a
  // rotation waits its turn while the old version stays readable. A new port, a revoked version (disabled
  // or destroyed: the operator's way to say "now"), a custom cloud-init (whatever it set up), or an
  // instance that does not say what it serves, is replaced at once.
  const serves = inst.state === 'Running' && keepsAccess(proxy, obs, inst);
  const grant = obs.replacementSlot;
  if (serves && grant && !grant.granted) return queuedReplacement(proxy, obs, iv, inst, grant.limit);
  return {
    branch: `${why}/delete`,
    status: setProvisioned(
      clearInstance(proxy.status, { keepProviderId: true }),
      false,
      ProvisionedReason.Replacing,
      why === 'stale'
        ? 'instance was built from another spec: deleting it'
        : 'spec changed: deleting the old instance',
      proxy.generation,
      now,
    ),
    action: { kind: 'delete', providerId: inst.providerId },
    requeue: { kind: 'after', ms: iv.DeletionPoll },
    ...(serves ? { slot: 'take' as const } : {}),
  };
}

/** The Provisioned message of the booting arm: how bootingMs knows the condition counts a boot. */
const BOOTING = 'instance is booting';

/**
 * How long until a booting instance is looked at again (held-poll.ts): ProvisioningPoll while it boots as
 * instances do, then a tenth of how long it has been booting, up to a minute. Past 20 minutes each pass
 * also says so (the handler's proxy.boot_slow); a minute apart, the lines keep the alert's 10-minute window
 * filled.
 */
const bootPollMs = (booting: number, iv: PollIntervals): number => heldPollMs(iv.ProvisioningPoll, booting);

/**
 * How long the instance has been booting: since the later of its creation and the first pass that saw it
 * booting (the Provisioned condition this arm stamps). The condition alone counted every hour it had been
 * False before for other reasons (quota refused, creates failing, a cloud-init error): a new instance's
 * first boot was then looked at once a minute, and would have paged as a slow one.
 */
function bootingMs(seenBooting: Condition | undefined, inst: ObservedInstance, now: Date): number {
  const since = seenBooting ? now.getTime() - seenBooting.lastTransitionTime.getTime() : 0;
  const created = inst.createdAt ? now.getTime() - inst.createdAt.getTime() : Number.POSITIVE_INFINITY;
  return Math.max(0, Math.min(since, created));
}

/** `status` with its Provisioned condition's lastTransitionTime at `now`. */
const stampedProvisioned = (status: ProxyResource['status'], now: Date): ProxyResource['status'] => ({
  ...status,
  conditions: status.conditions.map((c) =>
    c.type === ConditionType.Provisioned ? { ...c, lastTransitionTime: now } : c,
  ),
});

/** How long the proxy's Provisioned condition has been False (0 when it is not). */
function provisionedFalseForMs(status: ProxyResource['status'], now: Date): number {
  const provisioned = findCondition(status, ConditionType.Provisioned);
  return provisioned?.status === 'False' ? now.getTime() - provisioned.lastTransitionTime.getTime() : 0;
}

/** The longest wait between two creates of a proxy whose creates keep failing transiently: 60–120 polls. */
const CREATE_RETRY_MAX_POLLS = 60;

/**
 * 2–4 ProvisioningPolls after a first failed create (a throttled burst comes back spread by uid), growing
 * with how long the proxy has been without an instance (its Provisioned=False condition's age): each wait
 * half that age, at most CREATE_RETRY_MAX_POLLS polls, spread the same way.
 */
function createRetryMs(status: ProxyResource['status'], uid: string, iv: PollIntervals, now: Date): number {
  const without = provisionedFalseForMs(status, now);
  const polls = Math.min(Math.max(2, without / iv.ProvisioningPoll / 2), CREATE_RETRY_MAX_POLLS);
  return Math.round(iv.ProvisioningPoll * polls * (1 + hashFraction(uid)));
}
