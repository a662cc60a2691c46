// An instance a delivery created whose status write never recorded it, because the proxy's deletion landed
// in between: the document is gone (the write found it gone; a re-run that still finds the proxy records
// the instance instead, pass.ts recordingCreated), or another proxy now has the name. Nothing else
// will ever delete that instance but the orphan GC, 10 to 20 minutes later (seed §8): it is deleted now.
// Its name derives from a uid no document holds any more, so it cannot be anyone else's.
//
// Just created, it is almost always still being created, and GCE refuses a delete until the insert
// Operation is DONE (resourceNotReady; the provider answers 'not-ready'). The delivery cannot wait for
// that (operations are fire-and-forget) and a redelivery of its own request would find no proxy to act
// for, so the delete is handed to a request of its own, reason `unrecorded-instance`, carrying the
// instance: its handler throws while the creation runs, and Pub/Sub redelivers it with backoff (10-600 s)
// until the delete is taken. Each delivery is one delete call, so a duplicate is harmless.
//
// That request is all that names the instance, and any publisher of the topic can send one; so before
// deleting, it is checked against what the plane itself knows, as the GC checks an orphan: the instance is
// the one its uid names (instance-name.ts: every instance the plane creates is named from its proxy's uid)
// and no proxy document holds a uid naming that instance (ProxyStore.holdsUid: the uid in capitals, or
// with its last 12 digits changed, names the same one) or records it as its own (status.providerId: one
// that lost its uid field still does). A request that fails either deletes nothing — never a live
// proxy's VM, never one the plane did not create — and leaves the instance, if it is an orphan, to the GC.

import { withDeadline } from '../../../shared/src/adapters/deadline.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { isInstanceNamedFor, uidKey } from '../../../shared/src/domain/instance-name.js';
import { computePhase } from '../../../shared/src/domain/phase.js';
import { creatingInstance } from '../../../shared/src/domain/reconcile/managed.js';
import { nextReconcileAt } from '../../../shared/src/domain/reconcile/patch-status.js';
import type { UnrecordedInstance } from '../../../shared/src/messages/reconcile-request.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import { ProviderError, type ProviderRegistry } from '../../../shared/src/ports/provider.js';
import type { ProxyStore } from '../../../shared/src/ports/proxy-store.js';
import type { ReconcilePublisher } from '../../../shared/src/ports/reconcile-publisher.js';
import { type CreatedInstance, namingInstance, TransientReconcileError } from './pass.js';

export interface UnrecordedDeps {
  store: Pick<ProxyStore, 'holdsUid' | 'recordsInstance'>;
  providers: ProviderRegistry;
  publisher: ReconcilePublisher;
}

const DELETED_EVENT = 'reconcile.unrecorded_instance_deleted';
const HANDED_OFF_EVENT = 'reconcile.unrecorded_instance_handed_off';

/** The `unrecorded-instance` request for the instance: one publish; its delivery checks and deletes. */
async function handOff(deps: UnrecordedDeps, proxy: string, instance: UnrecordedInstance): Promise<void> {
  const { provider, providerId, uid } = instance; // what the request carries: nothing else
  await deps.publisher.publish({
    proxy,
    reason: 'unrecorded-instance',
    instance: { provider, providerId, uid },
  });
}

/** Called by the delivery that created the instance: delete it, or hand the delete to its own request. */
export async function dropUnrecorded(
  deps: UnrecordedDeps,
  log: Logger,
  proxy: string,
  instance: UnrecordedInstance,
): Promise<void> {
  const fields = { providerId: instance.providerId, uid: instance.uid };
  try {
    const outcome = await deps.providers.get(instance.provider)?.delete(instance.providerId);
    if (outcome !== 'not-ready') {
      log.warn(
        'deleted the instance this delivery created: its proxy was deleted before the status recorded it',
        { event: DELETED_EVENT, ...fields },
      );
      return;
    }
    await handOff(deps, proxy, instance);
    log.info('an unrecorded instance is still being created: its delete is handed to a request of its own', {
      event: HANDED_OFF_EVENT,
      ...fields,
    });
  } catch (err) {
    // The delivery is done, and a redelivery would find no proxy to act for.
    log.error('could not delete an instance its deleted proxy never recorded; the orphan GC will', {
      ...fields,
      error: err,
    });
  }
}

/**
 * Whether a proxy document owns the instance: one holds a uid naming it (ProxyStore.holdsUid: under any name,
 * spelt any way) or records it in its status (recordsInstance: one whose uid a console edit changed still
 * serves on it). Its passes decide on it then, and nothing here deletes it — the GC keeps it by the same rule
 * (gc/src/sweep.ts deleteOrphans).
 */
async function ownedByAProxy(
  store: UnrecordedDeps['store'],
  instance: Pick<UnrecordedInstance, 'providerId' | 'uid'>,
): Promise<boolean> {
  return (await store.holdsUid(instance.uid)) || (await store.recordsInstance(instance.providerId));
}

/**
 * Every instance this delivery created (handler.ts `created`) for a uid other than the one the document holds
 * now (`current`; null: no document) and that no document owns (ownedByAProxy): its proxy was deleted — and
 * perhaps created again under the name — before a status recorded it, so no pass will ever own it. Dropped
 * at every way a delivery ends — as usual, thrown, at its conflict bound, handed off — or the GC found it
 * 10 to 20 minutes later. The uid alone does not say so: a document whose uid a console edit changed still
 * records the instance it serves on, which an earlier pass of this very delivery created. `current`
 * undefined (not known): nothing is dropped; nor is an instance whose owner cannot be looked up (never
 * guess: the GC asks again).
 *
 * Only within `budgetLeft()` (ms the delivery has left of its pass-start budget, handler.ts
 * PASS_START_BUDGET_MS; unbounded: Infinity) is an instance looked up and deleted here: the delete may take
 * ~2 minutes of retries when Compute is slow, and a delivery ending past the budget (its last pass begun
 * late, or slow) would run into the function's timeout, killed before its logs and its retry. The ownership
 * lookups (up to 8 parallel queries, then one more, each retried by the Firestore client for minutes when
 * it is degraded) are waited on only for what is left of it, as the GC bounds the same lookup. Past it, or
 * with the lookups given up at it, the delete goes to the instance's own `unrecorded-instance` request (one
 * publish), whose delivery checks ownership and deletes.
 *
 * The budget keeps late work out, no more: a delete begun inside it is not sure to end inside the timeout
 * (refused as not ready, then its why-not-ready get and the hand-off's publish, each at its worst under a
 * degraded Compute API, can reach it: handler.ts PASS_START_BUDGET_MS). The invocation is then killed, Pub/Sub
 * redelivers, and the GC deletes what no redelivery finds.
 */
export async function dropSuperseded(
  deps: UnrecordedDeps,
  log: Logger,
  proxy: string,
  created: ReadonlyMap<string, CreatedInstance>,
  current: string | null | undefined,
  budgetLeft: () => number = () => Infinity,
): Promise<void> {
  if (current === undefined) return;
  // By uidKey, as every "does it name the same instance" comparison: a uid the document holds spelt another
  // way (a console edit changing its case) still holds the instance named after it — the live proxy's own.
  const kept = current === null ? null : uidKey(current);
  for (const instance of created.values()) {
    if (uidKey(instance.uid) === kept) continue;
    const fields = { providerId: instance.providerId, uid: instance.uid };
    const left = budgetLeft();
    if (left <= 0) {
      await handOffLate(deps, log, proxy, instance);
      continue;
    }
    try {
      const owned = ownedByAProxy(deps.store, instance);
      if (await (Number.isFinite(left) ? withDeadline(owned, left, () => new LookupOutOfTime()) : owned)) {
        log.info(
          'an instance this delivery created for an earlier uid belongs to a proxy; its passes own it',
          fields,
        );
        continue;
      }
    } catch (err) {
      if (err instanceof LookupOutOfTime) {
        // Given up at the budget (the lookups run on, their answer dropped): as past it, never guessed.
        await handOffLate(deps, log, proxy, instance);
        continue;
      }
      log.error('could not tell whether a proxy owns an instance this delivery created; the orphan GC will', {
        ...fields,
        error: err,
      });
      continue;
    }
    // Once more after the lookups (Firestore may have been slow): a delete begun past the budget is late.
    if (budgetLeft() > 0) await dropUnrecorded(deps, log, proxy, instance);
    else await handOffLate(deps, log, proxy, instance);
  }
}

/** dropSuperseded's ownership lookups given up at the delivery's budget. */
class LookupOutOfTime extends Error {
  constructor() {
    super("the ownership lookups did not answer within the delivery's pass-start budget");
  }
}

/** dropSuperseded past the delivery's budget: the delete to the instance's own request, never inline. */
async function handOffLate(
  deps: UnrecordedDeps,
  log: Logger,
  proxy: string,
  instance: CreatedInstance,
): Promise<void> {
  const fields = { providerId: instance.providerId, uid: instance.uid };
  try {
    await handOff(deps, proxy, instance);
    log.info(
      'past its time budget, the delivery hands the delete of an instance it created to a request of its own',
      {
        event: HANDED_OFF_EVENT,
        ...fields,
      },
    );
  } catch (err) {
    log.error('could not hand off the delete of an instance this delivery created; the orphan GC will', {
      ...fields,
      error: err,
    });
  }
}

/**
 * A delivery about to throw (a pass failed, or its writes kept conflicting) with an instance it created
 * that no status records yet (handler.ts `unrecorded`): the redelivery knows nothing of it, and a pass
 * that does not create again — the proxy's deletion (which would remove the document and leave the VM to
 * the GC), a latch, a cloud-init that cannot be read — would never record it, while the GC keeps it for
 * its live uid. So it is written into the status first, as recordingCreated would decide on it: providerId,
 * its spec hash unknown (''), over the document as read now and only while it is the same proxy naming no
 * instance; its Provisioned condition as the create arm writes it (managed.ts creatingInstance: False,
 * Provisioning, "creating instance …"), its phase derived again and due now: Provisioning, or Deleting. Never Failed,
 * when a manual (or secret-rotated) attempt past the latch created it: the create the latch recorded as
 * failed for good has just succeeded, and a PermanentError kept over the VM would be met by any plain
 * request — the requeue sweep's once the redeliveries run out (dead-lettered) — leaving it running and
 * billed under a Failed proxy with nothing due.
 * Best effort: if this fails too, the redelivery's create (a 409) or the GC is what is left.
 * Returns the uid the document holds as read (null: no document) for dropSuperseded, undefined when it was
 * not read (nothing unrecorded: every instance the delivery created is in a status) or could not be.
 */
export async function recordBeforeRetry(
  deps: { store: Pick<ProxyStore, 'get' | 'writeStatus'>; clock: Clock },
  log: Logger,
  name: string,
  unrecorded: ReadonlyMap<string, CreatedInstance>,
): Promise<string | null | undefined> {
  if (unrecorded.size === 0) return undefined;
  const { store } = deps;
  let stored: Awaited<ReturnType<typeof store.get>>;
  try {
    stored = await store.get(name);
  } catch (err) {
    log.warn('could not record the instance this delivery created before its retry', { error: err });
    return undefined;
  }
  const current = stored?.proxy.uid ?? null;
  const instance = stored ? unrecorded.get(stored.proxy.uid) : undefined;
  if (!stored || !instance || stored.proxy.status.providerId !== null) return current;
  try {
    // Due as a pass asking to run again stores it (patch-status.ts nextReconcileAt: a minute on, past
    // Pub/Sub's first redeliveries): should the redeliveries run out (dead-lettered), the requeue sweep
    // finds it due — a Provisioning or Deleting proxy with nothing due is one it never looks at.
    const { proxy } = stored;
    const now = deps.clock.now();
    const creating = creatingInstance(namingInstance(proxy.status, instance.providerId), proxy, now);
    const naming = { ...creating, nextReconcileAt: nextReconcileAt({ kind: 'now' }, now) };
    const status = { ...naming, phase: computePhase(proxy, naming) }; // Pending would contradict it
    const outcome = await store.writeStatus(name, status, stored.version);
    log.info('recorded the instance this delivery created before its retry', {
      providerId: instance.providerId,
      outcome,
    });
  } catch (err) {
    log.warn('could not record the instance this delivery created before its retry', { error: err });
  }
  return current;
}

/** Whether the request's providerId names the instance its uid names (its last segment: the name). */
const namesItsInstance = (instance: UnrecordedInstance): boolean =>
  isInstanceNamedFor(instance.providerId, instance.uid);

/**
 * The `unrecorded-instance` request: one delete. Thrown (so redelivered) while the instance is still being
 * created or the call failed in passing — a refusal too (a 403, deletion protection: the gce provider
 * retries those, and the request dead-letters once Pub/Sub's retries are spent); acknowledged once the
 * delete is under way, or when it cannot be done (its provider not registered: the GC's then). A document holding the instance's uid — under any name — or recording it in its
 * status owns it: its passes decide. A providerId that is not the instance the uid names is refused, deleting nothing.
 */
export async function handleUnrecorded(
  deps: UnrecordedDeps,
  log: Logger,
  proxy: string,
  instance: UnrecordedInstance,
): Promise<'deleting' | 'owned' | 'left-to-gc'> {
  const fields = { providerId: instance.providerId, uid: instance.uid };
  if (!namesItsInstance(instance)) {
    log.error('unrecorded-instance request refused: its providerId is not the instance its uid names', {
      proxy,
      ...fields,
    });
    return 'left-to-gc';
  }
  if (await ownedByAProxy(deps.store, instance)) {
    log.info('unrecorded instance belongs to a proxy after all; its passes own it', fields);
    return 'owned';
  }
  const provider = deps.providers.get(instance.provider);
  if (!provider) {
    log.error('could not delete an unrecorded instance: its provider is not registered; the orphan GC will', {
      provider: instance.provider,
      ...fields,
    });
    return 'left-to-gc';
  }
  let outcome: Awaited<ReturnType<typeof provider.delete>>;
  try {
    outcome = await provider.delete(instance.providerId);
  } catch (err) {
    if (err instanceof ProviderError && err.kind === 'transient') {
      throw new TransientReconcileError(`unrecorded instance delete: ${err.message}`, err.toFailure(), {
        cause: err,
      });
    }
    log.error('could not delete an instance its deleted proxy never recorded; the orphan GC will', {
      ...fields,
      error: err,
    });
    return 'left-to-gc';
  }
  if (outcome === 'not-ready') {
    throw new TransientReconcileError(
      `unrecorded instance ${instance.providerId} is still being created; redelivered until it can be deleted`,
    );
  }
  log.warn('deleted an instance its deleted proxy never recorded, once its creation had finished', {
    event: DELETED_EVENT,
    ...fields,
  });
  return 'deleting';
}
