// The reconcile function's handler: one delivery of {proxy, reason} runs passes until the proxy needs no
// immediate attention. controller-runtime's outcomes, mapped onto Pub/Sub:
//   RequeueNow       → the next pass runs in-process (bounded), then hands off by publishing
//   RequeueAfter(d)  → status.nextReconcileAt, drained by the requeue sweep
//   transient error  → thrown: the function answers 500 and Pub/Sub redelivers with backoff
//   quota/permanent  → recorded in status by the pass, and the message is acknowledged
// Duplicate and concurrent deliveries are harmless: every write is conditional on the version read, and
// a lost race re-runs the pass from a fresh read.
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import {
  decodePubSubCloudEvent,
  logUnknownFields,
  poisonFields,
} from '../../../shared/src/adapters/pubsub/decode-push.js';
import { ConditionType } from '../../../shared/src/domain/proxy.js';
import { findCondition } from '../../../shared/src/domain/reconcile/conditions.js';
import { isLatched } from '../../../shared/src/domain/reconcile/managed.js';
import {
  isKnownReconcileReason,
  ReceivedReconcileRequest,
  type ReconcileReason,
} from '../../../shared/src/messages/reconcile-request.js';
import type { ListOptions, Provider } from '../../../shared/src/ports/provider.js';
import { InvalidStoredProxy, StoreError } from '../../../shared/src/ports/proxy-store.js';
import type { ReconcilePublisher } from '../../../shared/src/ports/reconcile-publisher.js';
import type { ReplacementSlots } from '../../../shared/src/ports/replacement-slots.js';
import { onInvalidDocument } from './invalid-document.js';
import {
  type CreatedInstance,
  type PassDeps,
  type PassResult,
  runPass,
  TransientReconcileError,
} from './pass.js';
import { dropSuperseded, handleUnrecorded, recordBeforeRetry } from './unrecorded-instance.js';

export interface ReconcileDeps extends PassDeps {
  publisher: ReconcilePublisher;
  log: Logger;
  /** Passes per delivery, conflict re-runs and RequeueNow loops included. */
  maxPasses: number;
}

/**
 * Routine reasons: nothing about the spec or a secret moved, so the pass may decide on a cached cloud-init.
 * Every other reason (created, spec-changed, secret-rotated, manual — and one this function does not know,
 * which may announce exactly such a change) resolves it without the cache.
 */
const ROUTINE_REASONS = new Set<ReconcileReason>([
  'requeue',
  'drift-poll',
  'health-transition',
  'delete-requested',
]);
const mayUseCache = (reason: string) => isKnownReconcileReason(reason) && ROUTINE_REASONS.has(reason);

/**
 * No pass starts once the delivery has run this long: it ends as at the pass bound (a conflict redelivered,
 * a RequeueNow handed off). A pass that creates reads the instance and then inserts it, each call retried
 * under its own deadline (gce/retry.ts: ~2 minutes at worst), so a pass begun late in a degraded Compute
 * API would run into the function's timeout (300 s, shared/topology/functions.json) — killed after an
 * insert and before the status that records it, the instance waits for the redelivery (or gc) to be
 * found. Passes on a healthy API take well under a second: the budget cuts only a delivery already slow.
 *
 * What it bounds is the typical worst case of a pass's two calls (the get and the insert, each at its
 * worst: test/terraform/code-contract.test.ts holds budget + 2 × that within the timeout) — not every path.
 * A pass can make more Compute calls (get → missing → lastCreateFailure, paged → insert → 409 → get, or
 * insert unanswered, answered 5xx (not a stockout) or retried → one get, not retried: gce-provider.ts
 * lookAfter), and
 * an inline delete begun just inside the budget may meet resourceNotReady, its why-not-ready get and the
 * hand-off's publish: a Compute API at its worst-case retries on every call can still reach the timeout.
 * The invocation is then killed and Pub/Sub redelivers the request; nothing is lost (the redelivery finds
 * the instance by its name, and an instance no redelivery finds is the GC's).
 */
export const PASS_START_BUDGET_MS = 40_000;

export interface DeliveryOutcome {
  passes: number;
  /** `drift-poll-failed`: a drift poll's pass failed and is left to the next drift slot (not retried). */
  last: PassResult['kind'] | 'drift-poll-failed';
}

export async function handleReconcile(
  deps: ReconcileDeps,
  request: ReceivedReconcileRequest,
  /** When the request was published: its first pass's fresh reads may share one begun since. */
  publishedAt?: Date,
): Promise<DeliveryOutcome> {
  const log = deps.log.child({ proxy: request.proxy, reason: request.reason });
  if (request.instance) {
    await handleUnrecorded(deps, log, request.proxy, request.instance);
    return { passes: 0, last: 'not-found' };
  }
  if (!isKnownReconcileReason(request.reason)) {
    log.warn('reconcile request with a reason this function does not know: handled as a fresh pass');
  }
  let last: PassResult | null = null;
  // Every instance this delivery created, by uid: a re-run may read another proxy under the same name (the
  // first deleted and created again meanwhile), and create that one's instance too.
  const created = new Map<string, CreatedInstance>();
  // Those whose status write lost (a conflict), until a write lands: the re-run records them (pass.ts
  // recordingCreated). Never past that write — a pass that then finds the instance gone and clears it
  // must leave the next one free to create again.
  const unrecorded = new Map<string, CreatedInstance>();
  // `proxies reconcile` on a proxy that seems stuck: a Failed one gets a fresh attempt past its latch, since
  // a cause outside the spec (a grant that had not propagated) is fixed with no spec edit to unlatch it. So
  // does a new version of a secret it names: the cloud-init it boots from (`secretRef`: its digest is in the
  // spec hash) or its credentials changed with no generation bump, and may be what failed it for good.
  // Once: for this delivery's passes, which are that one attempt (and, handed off past the in-process
  // bound, the request that takes over). A pass chained by RequeueNow goes on with it while the status it
  // wrote is still latched (the adopt arm records a hash and asks again at once, PermanentError kept: the
  // next pass decides on the instance). After a lost write (a conflict) the re-run goes on with it when the
  // pass created an instance or was writing in one an earlier pass created (the re-run records that VM,
  // over a latch written meanwhile too), or read a latched status and did not latch it again by a create
  // of its own (a quota refusal, say: the attempt is not over). Any other pass ends it — one that wrote an
  // unlatched status (instance-missing, replace/gone), lost the write of a decision on an unlatched status
  // with no VM of this delivery's in it (a latch the next pass reads is another request's, written after
  // the operator acted, and is met), or latched again by its create. Handed off (an adopt pass that ended
  // past the bound), the attempt goes on in the request that takes over, which cannot tell the latch it
  // started from: one written meanwhile (a spec edit's) is gone past too — one more refused create.
  // A latch over an instance recorded with its hash unknown is one recorded after it (the provider, a cloud-init failing for good), or one
  // recordBeforeRetry kept over the VM it named before it cleared the latch (documents written then). It
  // cannot run twice: every arm that records PermanentError asks for no requeue (failure.ts,
  // cloud-init-error.ts, provider-missing), so a pass that latches again ends the delivery — its write
  // lost, the re-run meets the latch — and the next request meets the latch.
  const pastLatch =
    request.reason === 'manual' || request.reason === 'secret-rotated' ? request.reason : null;
  let retryLatched = pastLatch !== null;
  const deliveryStart = deps.clock.now().getTime();
  const budgetLeft = () => PASS_START_BUDGET_MS - (deps.clock.now().getTime() - deliveryStart);
  const mayStart = (pass: number) => pass === 1 || budgetLeft() > 0;
  // At every exit: past the budget, an instance to drop is handed to a request of its own, not deleted here.
  const drop = (current: string | null | undefined) =>
    dropSuperseded(deps, log, request.proxy, created, current, budgetLeft);
  // A drift poll's failed pass is left to the next slot only when it changed nothing outside: no VM created or
  // deleted (a delete may have landed: the status still names the old VM's address), no replacement slot
  // taken. Counted over this delivery's calls, whatever pass made them.
  const drift = request.reason === 'drift-poll' ? watchActs(deps) : null;
  const passDeps = drift?.deps ?? deps;
  let passes = 0;
  for (let pass = 1; pass <= deps.maxPasses && mayStart(pass); pass++) {
    passes = pass;
    const started = Date.now();
    let createdNow: CreatedInstance | undefined;
    try {
      const fresh = pass === 1 && !mayUseCache(request.reason);
      const onCreated = (c: CreatedInstance) => {
        createdNow = c;
      };
      last = await runPass(passDeps, request.proxy, fresh, unrecorded, publishedAt, onCreated, retryLatched);
    } catch (err) {
      // A document that does not fit is onReconcileEvent's to log, once, with the fields that fail.
      if (!(err instanceof InvalidStoredProxy)) log.error('reconcile pass failed', { pass, error: err });
      // Created, then the pass threw before its status write landed: recorded like one whose write lost.
      if (createdNow) {
        unrecorded.set(createdNow.uid, createdNow);
        created.set(createdNow.uid, createdNow);
      }
      await drop(await recordBeforeRetry(deps, log, request.proxy, unrecorded));
      // A steady proxy's drift poll is asked for again at its next slot (DriftPoll on): retried by Pub/Sub
      // as well, a Compute outage of hours kept ~18 retry chains in flight per proxy of the steady fleet
      // (one new each DriftPoll, each retried for ~90 minutes), offered Compute ~15× its usual calls and
      // dead-lettered a message per proxy per DriftPoll, and all of them came back at once when it cleared.
      // Not when this delivery acted (a create among them): the redelivery is what records an instance
      // created, and finds a delete that landed (or makes it) within seconds, not a DriftPoll on with leases
      // handing out the old address.
      if (drift && !drift.acted() && !(err instanceof InvalidStoredProxy)) {
        log.warn('drift poll failed: the next drift slot polls again', {
          event: 'reconcile.drift_poll_failed',
          pass,
        });
        return { passes: pass, last: 'drift-poll-failed' };
      }
      throw err;
    }
    // A conflict's `proxy` is the proxy as read (with any instance it records: no condition changed).
    const attemptGoesOn =
      last.kind === 'conflict'
        ? last.created !== undefined ||
          last.recordingEarlier === true ||
          (isLatched(last.proxy) &&
            !(last.triedCreate && isLatched({ ...last.proxy, status: last.plan.status })))
        : 'status' in last && isLatched({ ...last.proxy, status: last.status });
    if (!attemptGoesOn) retryLatched = false;
    if (last.created) created.set(last.created.uid, last.created);
    if (last.kind === 'conflict' && last.created) unrecorded.set(last.created.uid, last.created);
    else if (last.kind === 'written' || last.kind === 'unchanged') unrecorded.delete(last.proxy.uid);
    logPass(log, pass, last, Date.now() - started);
    const again = last.kind === 'conflict' || ('plan' in last && last.plan.requeue.kind === 'now');
    if (!again) {
      await drop(heldBy(last));
      return { passes: pass, last: last.kind };
    }
  }
  if (last?.kind === 'conflict') {
    await drop(await recordBeforeRetry(deps, log, request.proxy, unrecorded));
    throw new TransientReconcileError(`status write kept conflicting after ${passes} passes`);
  }
  // Still RequeueNow after the in-process bound (passes or time): hand off (status.nextReconcileAt, a minute on, is the
  // safety net: patch-status.ts SAFETY_NET_MS). The redelivery knows nothing of what this one created.
  if (last) await drop(heldBy(last));
  // An attempt past the latch still under way goes on in the request that takes over (an adopt pass that
  // ended past the budget: the next one decides on the VM); a plain requeue would meet the latch.
  await deps.publisher.publish({ proxy: request.proxy, reason: (retryLatched && pastLatch) || 'requeue' });
  log.warn('reconcile handed off after the in-process pass bound', {
    passes,
    handedOffAs: (retryLatched && pastLatch) || 'requeue',
    bound: passes < deps.maxPasses ? 'time' : 'passes',
  });
  return { passes, last: last?.kind ?? 'not-found' };
}

/** The uid whose proxy a pass that landed left under the name (null: none, deleted or never there). */
const heldBy = (r: PassResult): string | null => ('proxy' in r && r.kind !== 'deleted' ? r.proxy.uid : null);

/**
 * The cloud-init arms that leave a proxy on an unreadable credentials version (cloud-init-error.ts): out of
 * leasing (`cloud-init/error`), its instance deleted (`…-revoked`), or serving an older version meanwhile
 * (`…-serving`). Not the spec's latch (proxy.failed) nor a transient read (redelivered).
 */
const CLOUD_INIT_UNRESOLVED = /^cloud-init\/error(-serving|-revoked)?$/;
/** How long an instance may boot before each pass says so (proxy.boot_slow): a boot takes a minute or two. */
export const SLOW_BOOT_MS = 20 * 60_000;

function logPass(log: Logger, pass: number, r: PassResult, durationMs: number): void {
  if (r.kind === 'not-found') {
    log.info('reconcile pass', { pass, result: 'not-found', durationMs });
    return;
  }
  const { plan } = r;
  const fields = {
    pass,
    result: r.kind,
    branch: plan.branch,
    action: plan.action?.kind ?? null,
    requeue: plan.requeue.kind === 'after' ? `after ${plan.requeue.ms}ms` : plan.requeue.kind,
    ...('status' in r ? { phase: r.status.phase, nextReconcileAt: r.status.nextReconcileAt } : {}),
    durationMs,
  };
  const troubled = /\/(quota|permanent|transient)$|^cloud-init\/|provider-missing/.test(plan.branch);
  if (troubled) log.warn('reconcile pass', fields);
  else log.info('reconcile pass', fields);
  // The log contract of docs/operations.md: log-based metrics and alerts count these events.
  if (plan.branch.endsWith('/quota') && r.proxy.spec.mode === 'managed') {
    log.warn('provider quota exceeded', { event: 'provider.quota_exceeded', zone: r.proxy.spec.zone });
  }
  // A managed proxy whose credentials cannot be read for its cloud-init (secret or version missing,
  // disabled, destroyed, or not granted): not a failure of the pass, which backs off and tries again for as
  // long as it lasts — so counted here, or nothing would page (proxies stuck Pending on a bad secret).
  if (CLOUD_INIT_UNRESOLVED.test(plan.branch)) {
    const provisioned = findCondition(plan.status, ConditionType.Provisioned);
    log.warn('proxy cloud-init unresolved', {
      event: 'proxy.cloud_init_error',
      branch: plan.branch,
      detail: provisioned?.message ?? null,
    });
  }
  // An instance booting past SLOW_BOOT_MS (GCE holding it PENDING for capacity, STAGING or REPAIRING):
  // polled less often then, not a failure, and nothing else would page while the proxy never serves.
  if (
    plan.branch === 'provisioning' &&
    (plan.bootingMs ?? 0) >= SLOW_BOOT_MS &&
    r.proxy.spec.mode === 'managed'
  ) {
    log.warn('instance still booting', {
      event: 'proxy.boot_slow',
      zone: r.proxy.spec.zone,
      bootingMinutes: Math.floor((plan.bootingMs ?? 0) / 60_000),
    });
  }
  if (r.kind === 'written' && r.status.phase === 'Failed' && r.proxy.status.phase !== 'Failed') {
    // `reason` on this logger is the request's; the alert groups by failureReason, the condition's
    // reason code (ProvisionedReason: a short enum, bounded label cardinality), and never by the
    // free-text detail.
    const condition = findCondition(r.status, ConditionType.Provisioned);
    log.error('proxy failed', {
      event: 'proxy.failed',
      failureReason: condition?.reason ?? 'Unknown',
      detail: condition?.message ?? null,
    });
  }
}

/**
 * The function body: decode the push, then handle. A message that cannot be decoded is poison: it is
 * acknowledged and logged (returning normally), never retried; an unknown reason or an unknown top-level
 * field is not such a message (ReceivedReconcileRequest: the field is dropped, and named once here). A
 * document that no longer fits the model
 * likewise: retrying cannot fix it (and one whose deletion was requested is removed: invalid-document.ts).
 */
export async function onReconcileEvent(deps: ReconcileDeps, event: unknown): Promise<void> {
  const decoded = decodePubSubCloudEvent(event, ReceivedReconcileRequest);
  if (!decoded.ok) {
    deps.log.error('malformed reconcile request acknowledged', {
      ...poisonFields(decoded),
      detail: decoded.error.message,
    });
    return;
  }
  logUnknownFields(deps.log.child({ proxy: decoded.value.proxy }), decoded, 'reconcile-requests');
  try {
    await handleReconcile(deps, decoded.value, publishedAtOf(decoded.publishTime));
  } catch (err) {
    // Acknowledged, or (deletion requested) removed: invalid-document.ts.
    if (err instanceof InvalidStoredProxy) {
      await onInvalidDocument(deps, err);
      return;
    }
    if (err instanceof StoreError && err.kind === 'invalid') {
      deps.log.error('proxy document does not fit the model; acknowledged', {
        proxy: decoded.value.proxy,
        error: err,
      });
      return;
    }
    throw err;
  }
}

/** Pub/Sub's publish time of the delivery (RFC 3339), when it carries a readable one. */
function publishedAtOf(publishTime: string | undefined): Date | undefined {
  if (publishTime === undefined) return undefined;
  const at = new Date(publishTime);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/**
 * The deps of a delivery with its provider writes and replacement-slot takes watched: `acted()` is whether
 * any was asked for (whatever came of it: a call unanswered may have acted). Each method is bound: the
 * adapters are classes, whose methods a spread would not carry.
 */
function watchActs(deps: ReconcileDeps): { deps: ReconcileDeps; acted: () => boolean } {
  let acted = false;
  const watched = (p: Provider): Provider => ({
    name: p.name,
    create: (request: Parameters<Provider['create']>[0]) => {
      acted = true;
      return p.create(request);
    },
    delete: (providerId: string) => {
      acted = true;
      return p.delete(providerId);
    },
    get: (providerId: string) => p.get(providerId),
    listByTag: (options?: ListOptions) => p.listByTag(options),
    ...(p.lastCreateFailure ? { lastCreateFailure: (id: string) => p.lastCreateFailure!(id) } : {}),
  });
  const slots: ReplacementSlots = {
    take: (holder, intent) => {
      acted = true;
      return deps.slots.take(holder, intent);
    },
    restamp: (holder, replacing) => deps.slots.restamp(holder, replacing),
    release: (holder, proven) => deps.slots.release(holder, proven),
  };
  const providers = new Map([...deps.providers].map(([name, p]) => [name, watched(p)] as const));
  return { deps: { ...deps, providers, slots }, acted: () => acted };
}
