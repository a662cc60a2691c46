// One reconcile pass: observe → decide (pure) → act → patchStatusIfChanged (the single, conditional status
// write). Port of the seed's Reconcile body (§2); the state machine itself is shared/src/domain/reconcile.

import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { healthInstanceKey } from '../../../shared/src/domain/health/instance-key.js';
import {
  ConditionType,
  type ManagedSpec,
  type ProxyResource,
  type ProxyStatus,
} from '../../../shared/src/domain/proxy.js';
import { findCondition } from '../../../shared/src/domain/reconcile/conditions.js';
import { addressGone, healthInPassing, settle } from '../../../shared/src/domain/reconcile/failure.js';
import {
  finalizeStatus,
  SAFETY_NET_MS,
  statusChanged,
} from '../../../shared/src/domain/reconcile/patch-status.js';
import { observationNeeds, reconcile } from '../../../shared/src/domain/reconcile/reconcile.js';
import type {
  ActionResult,
  Failure,
  InstanceObservation,
  Observation,
  Plan,
  PollIntervals,
} from '../../../shared/src/domain/reconcile/types.js';
import { servedRefOf } from '../../../shared/src/domain/served-credentials.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import { type Provider, ProviderError, type ProviderRegistry } from '../../../shared/src/ports/provider.js';
import type { ProxyStore, StoredProxy } from '../../../shared/src/ports/proxy-store.js';
import type { ReplacementSlots } from '../../../shared/src/ports/replacement-slots.js';
import type { CloudInitResolver, Freshness } from './cloud-init.js';
import type { HealthSource } from './health-source.js';

export interface PassDeps {
  store: ProxyStore;
  providers: ProviderRegistry;
  cloudInit: CloudInitResolver;
  health: HealthSource;
  clock: Clock;
  intervals: PollIntervals;
  /** The fleet-wide cap on concurrent stale-hash replacements (RECONCILE_MAX_REPLACING). */
  slots: ReplacementSlots;
  log: Pick<Logger, 'info' | 'warn'>;
}

/** A failure worth a Pub/Sub redelivery: the handler throws it. */
export class TransientReconcileError extends Error {
  readonly kind = 'transient';
  constructor(
    message: string,
    readonly failure?: Failure,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TransientReconcileError';
  }
}

/** An instance this pass created: until a status write records it, nothing else knows of it. */
export interface CreatedInstance {
  provider: string;
  providerId: string;
  uid: string;
}

export type PassResult =
  /** The document does not exist (any more): nothing to do. */
  (
    | { kind: 'not-found' }
    /** Another writer moved the document between our read and our write: re-run from a fresh read. */
    | { kind: 'conflict'; plan: Plan; proxy: ProxyResource }
    | { kind: 'written' | 'unchanged' | 'deleted'; plan: Plan; proxy: ProxyResource; status: ProxyStatus }
  ) & {
    created?: CreatedInstance;
    /** A create this pass asked the provider for, whatever came of it (handler.ts: the latched attempt). */
    triedCreate?: true;
    /** This pass was writing into the status an instance an earlier pass of the delivery created. */
    recordingEarlier?: true;
  };

/**
 * One pass over the document as read. `createdBefore` holds the instances this delivery's earlier passes
 * created (by uid) whose status write lost a race: this pass records them (recordingCreated).
 */
export async function runPass(
  deps: PassDeps,
  name: string,
  fresh: boolean,
  createdBefore: ReadonlyMap<string, CreatedInstance> = new Map(),
  /** The event's publish time: a read begun since then is fresh enough (cloud-init.ts Freshness). */
  since?: Date,
  /**
   * Told of an instance this pass created, before its status write: a write that then throws (Firestore
   * unavailable) leaves it in no status, and the caller records it before Pub/Sub's retry
   * (recordBeforeRetry) — a redelivery that does not create again (a cloud-init unreadable by then, a
   * latch, a deletion) would otherwise never record it.
   */
  onCreated?: (instance: CreatedInstance) => void,
  /** A manual request's pass: one attempt past the permanent-failure latch (Observation.retryLatched). */
  retryLatched = false,
): Promise<PassResult> {
  const stored = await deps.store.get(name);
  if (!stored) return { kind: 'not-found' };
  const provider = providerOf(deps.providers, stored.proxy);
  const recording = recordingCreated(stored.proxy, provider, createdBefore.get(stored.proxy.uid));
  const freshness = { fresh, ...(fresh && since ? { since } : {}) };
  let obs = await observe(deps, recording, provider, freshness, retryLatched);
  const proxy = recording === stored.proxy ? recording : builtFrom(recording, obs.instance);
  const earlier = recording === stored.proxy ? {} : { recordingEarlier: true as const };
  let plan = reconcile(proxy, obs, deps.intervals);
  ({ obs, plan } = await withSlotIfAsked(deps, proxy, obs, plan));
  // A provider action is never decided on a cached cloud-init resolution. The cache is per function
  // instance (cloud-init.ts, up to its TTL), and a rotation handled on another instance may have outdated
  // it: a VM created from it would bring the old credentials version back, and its old hash against the
  // rotated status would delete the freshly rotated VM as a "replace". Nor is any change of what the
  // Provisioned condition says: a queued proxy waits on the very change such a cache may hide (on a stale
  // cache its retry would find nothing to replace and fall back to the drift poll), and a proxy in
  // CloudInitError would be taken back to a queued replacement by a cache from before the version was
  // disabled. One fresh read per create, delete or change of state, which are rare — a queued proxy's
  // retry refused a slot again reads nothing fresh, so a fleet waiting out a rotation costs Secret Manager
  // next to nothing. A fresh pass that may have shared a read begun since its event (`since`) is as fresh
  // as that event asks, not as the newest one: a redelivery of an older rotation's request would otherwise
  // delete the VM a newer rotation built. It too reads strictly before it acts.
  const acts = plan.action?.kind === 'create' || plan.action?.kind === 'delete';
  const reason = (st: ProxyStatus) => findCondition(st, ConditionType.Provisioned)?.reason;
  // Nor is a hash recorded (the adopt arm, after a failed status write left the instance recorded without
  // one): adopted from a cache older than the VM's build, the next pass would take the VM's own label for
  // stale and replace a VM built right.
  const changes = acts || plan.status.specHash !== proxy.status.specHash;
  const cachedDecision = !fresh
    ? changes || reason(plan.status) !== reason(proxy.status)
    : !!since && changes;
  if (cachedDecision && obs.cloudInit) {
    const cloudInit = await deps.cloudInit.resolve(proxy as ProxyResource & { spec: ManagedSpec }, {
      fresh: true,
    });
    obs = await withServedCredentials(deps, { ...obs, cloudInit }, { fresh: true });
    plan = reconcile(proxy, obs, deps.intervals);
    // A slot taken on the cached plan that the fresh one does not delete with is given back at once —
    // only one this pass took: a slot the proxy already held belongs to its replacement under way (a new
    // VM not yet healthy, which a stale cache takes for an old one), and freeing it would let one more
    // replacement start past RECONCILE_MAX_REPLACING before that VM proves healthy.
    if (tookSlot(obs) && plan.action?.kind !== 'delete') {
      await deps.slots.release({ proxy: proxy.name, uid: proxy.uid });
      const { replacementSlot: _released, ...rest } = obs;
      obs = rest;
      plan = reconcile(proxy, obs, deps.intervals);
    }
    ({ obs, plan } = await withSlotIfAsked(deps, proxy, obs, plan));
  }
  // An instance delete is never decided on a document another pass has moved since: instance names are a
  // pure function of the UID, so a replacement built meanwhile (by a concurrent delivery) answers to the
  // same providerId, and a pass holding the old status or spec takes it for the old instance — its label
  // "wrong", or the status "Replacing" — and would delete the fresh VM. Any pass that creates an instance
  // first writes the status that clears providerId, so a document still at the version read proves the
  // instance observed is the one this pass reasoned about. A proxy being deleted is exempt: deleting its
  // instance is right whatever was read. One read per delete, which is rare.
  //
  // A slot this pass took for that delete is given back when the document moved but its instance did not
  // (another writer: a probe's verdict, a spec edit): the re-run takes it again if its fresh read still
  // replaces, and one that no longer does (the change reverted meanwhile) would otherwise hold it, and
  // hold up the fleet's other replacements, until the slot went stale (REPLACEMENT_SLOT_STALE_MS). The
  // instance is the one its health key names (providerId and when Provisioned last turned True: a
  // replacement clears it, then moves it). When the instance moved, a concurrent delivery of this proxy is
  // replacing it on the same slot (its take found it held): the slot stays, its replacement's until the
  // new VM proves healthy.
  if (plan.action?.kind === 'delete' && !proxy.deletionRequestedAt) {
    const current = await deps.store.get(name);
    if (!current || current.version !== stored.version) {
      const key = healthInstanceKey(stored.proxy);
      if (tookSlot(obs) && (!current || (key !== '' && healthInstanceKey(current.proxy) === key)))
        await deps.slots.release({ proxy: proxy.name, uid: proxy.uid });
      return current ? { kind: 'conflict', plan, proxy, ...earlier } : { kind: 'not-found' };
    }
  }
  let created: CreatedInstance | undefined;
  const triedCreate = plan.action?.kind === 'create';
  if (plan.action && plan.action.kind !== 'deleteDocument') {
    const result = await act(provider!, plan);
    // A slot this pass took for a delete the provider refused outright is given back: nothing is being
    // replaced, and the redelivery takes it again if it still replaces. One that no longer does (the change
    // reverted meanwhile) would otherwise hold it, and hold up the fleet's other replacements, until it
    // went stale (REPLACEMENT_SLOT_STALE_MS). A delete that may have acted (a 5xx, a timeout, a rate
    // limit: GCE's delete is fire-and-forget, and an attempt timed out may still land) keeps it, its
    // replacement's — as does a concurrent delivery's delete under way, which a look at the VM, still
    // RUNNING for a moment, could not tell from none.
    if (plan.action.kind === 'delete' && !result.ok && result.refused && tookSlot(obs))
      await deps.slots.release({ proxy: proxy.name, uid: proxy.uid }).catch(() => false);
    // A delete made (or maybe made; not one refused as not ready) on the slot the proxy already held — a
    // replacement right after a replacement, or a concurrent delivery's take — records the instance it now
    // replaces: from then on only a Healthy verdict about another instance frees the slot
    // (replacement-slots.ts releaseSlot), not one about this instance read by a pass racing this one.
    // Recorded once the delete is made, not at the take (a cached plan may take for a new VM it mistakes
    // for an old one) nor between the version check and the delete (no transaction may wait there: above).
    // A verdict about that instance landing during the delete call still frees the slot, and this
    // replacement then runs uncounted — one over RECONCILE_MAX_REPLACING until its new VM proves healthy
    // (logged); no slot is taken for it then, which a proxy deleted meanwhile would hold until it went stale.
    const slot = obs.replacementSlot;
    const deleteMade = result.ok ? result.deleteOutcome !== 'not-ready' : !result.refused;
    if (plan.action.kind === 'delete' && deleteMade && slot?.granted && slot.alreadyHeld) {
      const holder = { proxy: proxy.name, uid: proxy.uid };
      const held = await deps.slots.restamp(holder, healthInstanceKey(proxy)).catch((err: unknown) => err);
      if (held !== true) {
        deps.log.warn('replacement slot not marked for the instance this delete replaces', {
          proxy: proxy.name,
          why: held === false ? 'freed during the delete: this replacement runs uncounted' : String(held),
        });
      }
    }
    if (plan.action.kind === 'create' && result.ok && result.providerId) {
      created = { provider: provider!.name, providerId: result.providerId, uid: proxy.uid };
      onCreated?.(created);
    }
    plan = settle(proxy, plan, result, obs, deps.intervals);
  }
  if (plan.requeue.kind === 'error') {
    const { failure } = plan.requeue;
    // A pass that fails in passing writes nothing (Pub/Sub redelivers it) — except an address the pass saw
    // go (addressGone), or else a health verdict that changes the status (healthInPassing: an outage of
    // Secret Manager or Compute must not keep a dead proxy Healthy). Best effort: the pass's own failure
    // is what is thrown either way.
    const cleared = addressGone(proxy, obs, failure) ?? healthInPassing(proxy, obs);
    let unwritten = '';
    if (cleared) {
      const retry = { kind: 'after' as const, ms: SAFETY_NET_MS };
      try {
        await patchStatusIfChanged(
          deps.store,
          stored,
          { ...plan, status: cleared, requeue: retry },
          deps.clock.now(),
          { observed: false },
        );
      } catch (err) {
        unwritten = ` (what it saw was not written: ${err instanceof Error ? err.message : String(err)})`;
      }
    }
    throw new TransientReconcileError(`${plan.branch}: ${failure.message}${unwritten}`, failure);
  }
  // Freed before the status write: a crash in between leaves the slot free and the pass re-runs (release
  // is idempotent), never a slot held by a replacement that is over. Freed only by a verdict about another
  // instance than the one the slot replaces: this pass may have read the old instance recovering just as
  // another delivery took the slot to replace it (replacement-slots.ts releaseSlot).
  if (plan.slot === 'release') {
    // The document's deletion frees the slot whatever the status says (it may still name the instance
    // the slot was taken to replace, its write lost to the deletion request).
    const proven =
      plan.action?.kind === 'deleteDocument'
        ? undefined
        : healthInstanceKey({ uid: proxy.uid, spec: proxy.spec, status: plan.status });
    await deps.slots.release({ proxy: proxy.name, uid: proxy.uid }, proven);
  }
  if (plan.action?.kind === 'deleteDocument') {
    const outcome = await deps.store.deleteDocument(name, stored.version);
    if (outcome === 'conflict') return { kind: 'conflict', plan, proxy, ...earlier };
    return outcome === 'gone'
      ? { kind: 'not-found' }
      : { kind: 'deleted', plan, proxy, status: proxy.status };
  }
  // RequeueAfter counts from now, after the action returned, not from the observation.
  const written = await patchStatusIfChanged(deps.store, stored, plan, deps.clock.now());
  return { ...written, ...earlier, ...(created ? { created } : {}), ...(triedCreate ? { triedCreate } : {}) };
}

/**
 * The seed's deferred patchStatusIfChanged: observedGeneration, phase and nextReconcileAt are computed,
 * and the status is written once, conditionally on the version read, only when it differs.
 */
export async function patchStatusIfChanged(
  store: ProxyStore,
  stored: StoredProxy,
  plan: Plan,
  now: Date,
  opts: { observed?: boolean } = {},
): Promise<PassResult> {
  const { proxy } = stored;
  const status = finalizeStatus(proxy, plan.status, plan.requeue, now, opts.observed ?? true);
  if (!statusChanged(proxy.status, status)) return { kind: 'unchanged', plan, proxy, status };
  const outcome = await store.writeStatus(proxy.name, status, stored.version);
  if (outcome === 'conflict') return { kind: 'conflict', plan, proxy };
  return outcome === 'gone' ? { kind: 'not-found' } : { kind: 'written', plan, proxy, status };
}

/**
 * The proxy as this pass decides on it: with the instance an earlier pass of this delivery created, when
 * that pass's status write lost to another writer (a spec edit, say) and the status names no instance.
 * Its spec hash is unknown (''), until the instance's own label says (builtFrom). Instance names are a
 * function of the uid, and provider and zone are immutable, so that providerId is the proxy's instance
 * whoever created it; the pass observes it and decides as for any recorded instance (kept, replaced on the
 * edited spec, deleted with the proxy; an unknown hash is adopted, and the instance's label then decides),
 * and its status write records it. Without this a re-run that does not create again — a cloud-init that
 * cannot be read now, a latch — leaves a VM no status names, which the orphan GC keeps because its uid is
 * live. A status that names an instance, or another uid, is left as read. The handler passes an instance
 * only until a status write lands (a later pass that finds it gone and clears it must be free to create
 * again), and writes it into the status itself before a throw (unrecorded-instance.ts recordBeforeRetry).
 *
 * The version check before a delete does not cover such a pass: the document read names no instance, so
 * a concurrent pass may build one under the name without writing first. So the hash it decides on is the
 * one the observed instance carries (builtFrom), never the one its create asked for: a 409 hands back an
 * instance a concurrent delivery built from the edited spec, which the hash asked for would take for the
 * old instance and delete. Not seen (a failed read), the hash stays unknown: the adopt branch records the
 * spec's, and the next pass's label check replaces the instance only if it was built from another.
 */
export function recordingCreated(
  proxy: ProxyResource,
  provider: Provider | undefined,
  created: CreatedInstance | undefined,
): ProxyResource {
  if (!created || proxy.status.providerId !== null || created.uid !== proxy.uid) return proxy;
  if (created.provider !== provider?.name) return proxy;
  return { ...proxy, status: namingInstance(proxy.status, created.providerId) };
}

/** A status naming an instance this delivery created: its spec hash unknown ('') until its label says. */
export const namingInstance = (status: ProxyStatus, providerId: string): ProxyStatus => ({
  ...status,
  providerId,
  specHash: '',
});

/** A recorded-by-this-delivery instance's hash as the instance itself says it was built from. */
function builtFrom(proxy: ProxyResource, seen: InstanceObservation | null): ProxyResource {
  if (seen?.kind !== 'found' || seen.instance.specHash === null) return proxy;
  return { ...proxy, status: { ...proxy.status, specHash: seen.instance.specHash } };
}

function providerOf(providers: ProviderRegistry, proxy: ProxyResource): Provider | undefined {
  // A proxy being deleted after a mode switch still names no provider; gce is the only one that exists.
  const name = proxy.spec.mode === 'managed' ? proxy.spec.provider : 'gce';
  return providers.get(name);
}

/** A slot granted to this pass, not one the proxy already held (a replacement of its own under way). */
function tookSlot(obs: Observation): boolean {
  return obs.replacementSlot?.granted === true && !obs.replacementSlot.alreadyHeld;
}

/**
 * A serving instance is deleted for a stale hash only with a replacement slot, asked for right before
 * acting. Taking is idempotent: a duplicate delivery, or this proxy's next pass, finds the slot it holds.
 * Refused, the pass decides again with the refusal: the old instance keeps serving and the proxy asks
 * again later. It comes before the version check in runPass, never between that check and the delete: the
 * check is what proves the instance is still the old one, and a transaction waiting on a contended
 * document in between would let a concurrent pass build the replacement meanwhile.
 */
async function withSlotIfAsked(
  deps: PassDeps,
  proxy: ProxyResource,
  obs: Observation,
  plan: Plan,
): Promise<{ obs: Observation; plan: Plan }> {
  if (plan.slot !== 'take' || obs.replacementSlot) return { obs, plan };
  const holder = { proxy: proxy.name, uid: proxy.uid };
  const taken = {
    ...obs,
    replacementSlot: await deps.slots.take(holder, { replacing: healthInstanceKey(proxy) }),
  };
  return { obs: taken, plan: taken.replacementSlot.granted ? plan : reconcile(proxy, taken, deps.intervals) };
}

async function observe(
  deps: PassDeps,
  proxy: ProxyResource,
  provider: Provider | undefined,
  fresh: Freshness,
  retryLatched: boolean,
): Promise<Observation> {
  const needs = observationNeeds(proxy, provider !== undefined, retryLatched);
  const [cloudInit, instance, health] = await Promise.all([
    needs.cloudInit ? deps.cloudInit.resolve(proxy as ProxyResource & { spec: ManagedSpec }, fresh) : null,
    needs.instance && provider ? observeInstance(provider, proxy) : null,
    deps.health.verdictFor(proxy),
  ]);
  const obs = {
    now: deps.clock.now(),
    providerRegistered: provider !== undefined,
    cloudInit,
    instance,
    health,
    retryLatched,
  };
  return withServedCredentials(deps, obs, fresh);
}

/**
 * An instance serving another credentials version than the spec resolves to now (a rotation under way):
 * whether clients can keep using it depends on that version (managed.ts keepsAccess). One more Secret
 * Manager read, only then; observed again whenever the cloud-init is, so the two always agree.
 */
async function withServedCredentials(
  deps: PassDeps,
  obs: Observation,
  opts: Freshness,
): Promise<Observation> {
  const { servedCredentials: _stale, ...rest } = obs;
  const { cloudInit, instance } = rest;
  const served = instance?.kind === 'found' ? instance.instance.serves?.credentialsSecret : null;
  // Also when the newest version cannot be read at all: the instance may keep serving an older one.
  const differs = cloudInit?.ok
    ? served !== cloudInit.credentialsSecret
    : cloudInit?.failure.kind === 'invalid';
  const rotated = served && differs ? servedRefOf(served) : undefined;
  return rotated ? { ...rest, servedCredentials: await deps.cloudInit.versionState(rotated, opts) } : rest;
}

async function observeInstance(provider: Provider, proxy: ProxyResource): Promise<InstanceObservation> {
  const providerId = proxy.status.providerId!;
  try {
    const instance = await provider.get(providerId);
    if (instance) return { kind: 'found', instance };
    // Only a managed proxy that is not being deleted can act on why its create failed.
    const ask = !proxy.deletionRequestedAt && proxy.spec.mode === 'managed' && provider.lastCreateFailure;
    return { kind: 'missing', createFailure: ask ? await provider.lastCreateFailure!(providerId) : null };
  } catch (err) {
    if (err instanceof ProviderError) return { kind: 'error', failure: err.toFailure() };
    throw err;
  }
}

/** `refused`: the provider answered that it did nothing (see refusedOutright). */
type Acted = ActionResult & { refused?: true };

/**
 * A 4xx other than a timeout (408) or a rate limit (429) — a grant denied, a field refused, an Operation
 * that failed — is an answer that nothing was done. A 5xx, a 408/429 or no answer at all may have acted.
 */
const refusedOutright = (err: ProviderError) =>
  err.status !== undefined &&
  err.status >= 400 &&
  err.status < 500 &&
  err.status !== 408 &&
  err.status !== 429;

async function act(provider: Provider, plan: Plan): Promise<Acted> {
  const action = plan.action!;
  try {
    if (action.kind === 'create') return { ok: true, ...(await provider.create(action.request)) };
    if (action.kind === 'delete')
      return { ok: true, deleteOutcome: await provider.delete(action.providerId) };
    return { ok: true };
  } catch (err) {
    if (err instanceof ProviderError)
      return {
        ok: false,
        failure: err.toFailure(),
        ...(refusedOutright(err) ? { refused: true as const } : {}),
      };
    throw err;
  }
}
