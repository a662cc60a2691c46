// The gce provider (seed §5): instances.{insert,get,delete,aggregatedList} and nothing else on the hot
// path. Operations are fire-and-forget: readiness is discovered by get polls, never by waiting.
import type { InstancesClient, protos, ZoneOperationsClient } from '@google-cloud/compute';
import type { Failure, InstanceRequest, ObservedInstance } from '../../domain/reconcile/types.js';
import {
  type DeleteOutcome,
  LISTING_STOPPED,
  type ListOptions,
  type OwnedInstance,
  type OwnedInstanceList,
  type Provider,
  ProviderError,
} from '../../ports/provider.js';
import { jsonLogger, type Logger } from '../log/json-logger.js';
import { buildInsertRequest, type InsertOptions } from './build-insert-request.js';
import { computeErrorInfo, operationError, toProviderError } from './errors.js';
import { observeInstance, ownershipOf } from './instance-state.js';
import { OWNED_FILTER } from './labels.js';
import { type InstanceRef, parseProviderId, providerIdOf, zoneOfScope } from './provider-id.js';
import { defaultRetry, type RetryOptions, withRetry } from './retry.js';

type Operation = protos.google.cloud.compute.v1.IOperation;
type AggregatedList = protos.google.cloud.compute.v1.IInstanceAggregatedList;

export type InstancesApi = Pick<InstancesClient, 'insert' | 'get' | 'delete' | 'initialize'>;
export type ZoneOperationsApi = Pick<ZoneOperationsClient, 'list'>;

export interface GceProviderOptions extends Omit<InsertOptions, 'project'> {
  project: string;
  instances: InstancesApi;
  /** Enables lastCreateFailure (async quota / stockout discovery); optional. */
  zoneOperations?: ZoneOperationsApi;
  retry?: RetryOptions;
  /** Where best-effort failures are reported (they change no outcome); stdout JSON by default. */
  log?: Logger;
}

const AGGREGATED_PAGE_SIZE = 500;
/** Pages of 500 insert operations of one instance read at most (a week of inserts a minute). */
const OPERATION_PAGES = 20;
const AGGREGATED_MAX_PAGES = 100;

const defaultLog = jsonLogger({ component: 'gce-provider' });

/**
 * A read or a delete that fails is never the spec's fault — deletion protection turned on by hand (HTTP
 * 400), like the 403s every call retries (IAM propagating, the API disabled, VPC Service Controls:
 * errors.ts classify). Classed permanent, a read would latch PermanentError (Failed, unleasable) on a
 * proxy whose VM serves, and a delete would leave a deleted proxy's VM running, billed, with no pass to
 * come (phase Deleting, nothing due), or latch a replacement's proxy Failed until someone edited a spec
 * that was never the problem. Retried with backoff instead, the answer in the pass's log each time.
 */
function retried(err: unknown): unknown {
  if (!(err instanceof ProviderError) || err.kind === 'transient') return err;
  return new ProviderError('transient', err.message, { cause: err, status: err.status, reason: err.reason });
}

/** A delete refused while the instance is not ready, in both of GCE's spellings. */
const NOT_READY: ReadonlySet<string> = new Set(['resourceNotReady', 'RESOURCE_NOT_READY']);

export class GceProvider implements Provider {
  readonly name = 'gce';
  constructor(private readonly opts: GceProviderOptions) {}

  async create(request: InstanceRequest): Promise<{ providerId: string }> {
    const providerId = providerIdOf({ zone: request.zone, name: request.name });
    const insert = buildInsertRequest(request, this.opts);
    let answered = false;
    let attempts = 0;
    try {
      const [op] = await this.call(() => {
        attempts++;
        return this.opts.instances.insert(insert);
      }, 'instances.insert');
      answered = true;
      // Fire-and-forget, but an Operation that already failed (quota, stockout) says so now.
      const failed = operationError(
        (op as { latestResponse?: Operation }).latestResponse,
        'instances.insert',
      );
      if (failed) throw failed;
    } catch (err) {
      // 409 alreadyExists: a duplicate or concurrent delivery already created it (same deterministic name)
      // — or another resource holds the name: GCE names the boot disk after the instance, and a disk left
      // over (an insert that failed half-way) refuses the insert with the same 409. Taken for a create, that
      // would send the proxy round create → missing → create for good, with nothing in its status.
      if (err instanceof ProviderError && err.status === 409) {
        if (await this.get(providerId)) return { providerId };
        throw new ProviderError(
          'transient',
          `instances.insert answered 409 but there is no instance ${request.name}: another resource holds the name (a boot disk ${request.name} left over?): ${err.message}`,
          { cause: err, status: 409, reason: err.reason },
        );
      }
      // An insert given up unanswered, or answered 5xx (not a stockout) — on any attempt: a retry follows
      // only such an answer (or a rate limit), and a later attempt's refusal says nothing of an earlier one —
      // may have created the instance all the same: a look settles it. Found, it is this create's (its
      // name is the proxy uid's), and the pass records it now. Answered as a failure, a manual attempt past
      // a proxy's permanent-failure latch recorded nothing, and once its redeliveries ran out every later
      // request stopped at the latch: the VM ran, and billed, unrecorded under a Failed proxy. One attempt,
      // not the retries (Compute is struggling already: the pass's time is better spent); a look that
      // fails changes nothing but is logged.
      if (!answered && (attempts > 1 || mayHaveActed(err)) && (await this.lookAfter(providerId, err)))
        return { providerId };
      throw err;
    }
    return { providerId };
  }

  async get(providerId: string): Promise<ObservedInstance | null> {
    const ref = this.ref(providerId);
    try {
      return observeInstance(await this.instance(ref), ref.zone);
    } catch (err) {
      if (err instanceof ProviderError && err.status === 404) return null;
      throw retried(err);
    }
  }

  async delete(providerId: string): Promise<DeleteOutcome> {
    const ref = this.ref(providerId);
    try {
      const [op] = await this.call(
        () => this.opts.instances.delete({ project: this.opts.project, zone: ref.zone, instance: ref.name }),
        'instances.delete',
      );
      // As for an insert: an Operation that already failed says so now. Read as 'deleting', the GC counted
      // a VM still there as deleted and an unrecorded-instance request was acknowledged for it.
      const failed = operationError(
        (op as { latestResponse?: Operation }).latestResponse,
        'instances.delete',
      );
      if (failed) throw failed;
    } catch (err) {
      if (err instanceof ProviderError && err.status === 404) return 'deleting';
      // The 400 answer spells it resourceNotReady, an Operation's error RESOURCE_NOT_READY (errors.ts).
      if (err instanceof ProviderError && NOT_READY.has(err.reason ?? '')) return this.whyNotReady(ref);
      throw retried(err);
    }
    return 'deleting';
  }

  /**
   * GCE answers a delete with 400 resourceNotReady both while an earlier delete is still running and while
   * the instance is still being created (its insert Operation not DONE), in the same words. Only the first
   * is "already going": a delete refused during the creation did nothing, and the instance comes up
   * RUNNING unless the caller asks again. The instance's status tells them apart: STOPPING (or gone) is a
   * delete under way; anything else (PROVISIONING, STAGING, a RUNNING one whose insert is finishing) is
   * not ready yet — safe to ask again, where taking it for done would leak a VM.
   */
  private async whyNotReady(ref: InstanceRef): Promise<DeleteOutcome> {
    try {
      const inst = await this.instance(ref);
      return inst.status === 'STOPPING' || inst.status === 'DEPROVISIONING' ? 'deleting' : 'not-ready';
    } catch (err) {
      if (err instanceof ProviderError && err.status === 404) return 'deleting';
      throw retried(err);
    }
  }

  async lastCreateFailure(providerId: string): Promise<Failure | null> {
    const ops = this.opts.zoneOperations;
    if (!ops) return null;
    const ref = this.ref(providerId);
    const filter = `(operationType = "insert") AND (targetLink = "${this.targetLink(ref)}")`;
    const mine = (op: Operation) =>
      op.operationType === 'insert' && op.targetLink?.endsWith(`/instances/${ref.name}`) === true;
    // Every page: GCE lists by name (operation-<ms>-…), oldest first, and refuses a sort order beside a
    // filter — so the newest is on the last page. A proxy re-inserting each QuotaRetry for hours has more
    // than a page of them, and the newest of the first (oldest) page read an insert still running, or a
    // later failure, as the old one. Bounded: past OPERATION_PAGES the newest is not known.
    let newest: Operation | undefined;
    let pageToken: string | undefined;
    try {
      for (let page = 0; page < OPERATION_PAGES; page++) {
        const [list, next] = await this.call(
          () =>
            ops.list(
              { project: this.opts.project, zone: ref.zone, filter, maxResults: 500, pageToken },
              { autoPaginate: false },
            ),
          'zoneOperations.list',
        );
        for (const op of list ?? [])
          if (mine(op) && (!newest || Date.parse(op.insertTime ?? '') > Date.parse(newest.insertTime ?? '')))
            newest = op;
        pageToken = next?.pageToken ?? undefined;
        if (!pageToken) break;
      }
    } catch (err) {
      // Best effort: without it, a failed create is simply retried by the next pass — but said aloud, since
      // a 403/404 here (a missing permission, an endpoint without the method) silently turns every async
      // quota or stockout into an endless re-insert with no QuotaExceeded and no alert.
      const e = err instanceof ProviderError ? err : undefined;
      (this.opts.log ?? defaultLog).warn('zoneOperations.list failed; create failures go unseen', {
        zone: ref.zone,
        status: e?.status,
        reason: e?.reason,
        error: err,
      });
      return null;
    }
    if (pageToken) {
      (this.opts.log ?? defaultLog).warn(
        'more insert operations than zoneOperations pages read; the newest unseen',
        {
          zone: ref.zone,
          instance: ref.name,
          pages: OPERATION_PAGES,
        },
      );
      return null;
    }
    if (newest?.status !== 'DONE') return null;
    return operationError(newest, 'instances.insert')?.toFailure() ?? null;
  }

  async listByTag(options: ListOptions = {}): Promise<OwnedInstanceList> {
    const instances: OwnedInstance[] = [];
    const unreachable = new Set<string>();
    let pageToken: string | undefined;
    for (let page = 0; page < AGGREGATED_MAX_PAGES; page++) {
      if (page > 0 && options.stop?.())
        throw new ProviderError('transient', `aggregatedList stopped after ${page} pages: asked to stop`, {
          reason: LISTING_STOPPED,
        });
      const response = await this.aggregatedPage(pageToken);
      for (const scope of response.unreachables ?? []) unreachable.add(zoneOfScope(scope));
      for (const [scope, scoped] of Object.entries(response.items ?? {})) {
        if (scoped.warning?.code === 'UNREACHABLE') unreachable.add(zoneOfScope(scope));
        for (const inst of scoped.instances ?? []) {
          const owner = ownershipOf(inst);
          if (!owner.uid) continue;
          instances.push({ ...observeInstance(inst, zoneOfScope(scope)), ...owner, uid: owner.uid });
        }
      }
      pageToken = response.nextPageToken ?? undefined;
      if (!pageToken) return { instances, unreachable: [...unreachable] };
    }
    throw new ProviderError('transient', `aggregatedList did not end within ${AGGREGATED_MAX_PAGES} pages`);
  }

  /**
   * One raw aggregatedList page. The public aggregatedListAsync iterator drops the response's
   * `unreachables`, which returnPartialSuccess puts there; the page call keeps them.
   */
  private async aggregatedPage(pageToken: string | undefined): Promise<AggregatedList> {
    const instances = this.opts.instances as InstancesApi & {
      innerApiCalls?: Record<
        string,
        (req: unknown, opts: unknown) => Promise<[unknown, unknown, AggregatedList]>
      >;
    };
    await instances.initialize();
    const page = instances.innerApiCalls?.aggregatedList;
    if (!page) throw new ProviderError('permanent', 'instances client has no aggregatedList call');
    const request = {
      project: this.opts.project,
      filter: OWNED_FILTER,
      returnPartialSuccess: true,
      maxResults: AGGREGATED_PAGE_SIZE,
      ...(pageToken ? { pageToken } : {}),
    };
    const [, , raw] = await this.call(
      () => page(request, { autoPaginate: false }),
      'instances.aggregatedList',
    );
    return raw ?? {};
  }

  private ref(providerId: string): InstanceRef {
    const ref = parseProviderId(providerId);
    if (!ref) throw new ProviderError('permanent', `not a gce providerId: ${JSON.stringify(providerId)}`);
    return ref;
  }

  private targetLink(ref: InstanceRef): string {
    return `https://www.googleapis.com/compute/v1/projects/${this.opts.project}/zones/${ref.zone}/instances/${ref.name}`;
  }

  /** instances.get of `ref` (ProviderError, a 404 included, when it fails); `attempts` caps the retries. */
  private async instance(ref: InstanceRef, attempts?: number) {
    const [inst] = await this.call(
      () => this.opts.instances.get({ project: this.opts.project, zone: ref.zone, instance: ref.name }),
      'instances.get',
      attempts,
    );
    return inst;
  }

  private async call<T>(fn: () => Promise<T>, what: string, attempts?: number): Promise<T> {
    const retry = this.opts.retry ?? defaultRetry;
    try {
      return await withRetry(fn, attempts === undefined ? retry : { ...retry, attempts });
    } catch (err) {
      throw toProviderError(err, what);
    }
  }

  /** Whether an insert that failed as `failure` made the instance after all: one get, never thrown. */
  private async lookAfter(providerId: string, failure: unknown): Promise<boolean> {
    const ref = this.ref(providerId);
    try {
      await this.instance(ref, 1);
      return true;
    } catch (err) {
      if (!(err instanceof ProviderError && err.status === 404)) {
        (this.opts.log ?? defaultLog).warn('instances.get after an unanswered insert failed too', {
          providerId,
          insertError: failure instanceof Error ? failure.message : String(failure),
          error: err instanceof Error ? err.message : String(err),
        });
      }
      return false;
    }
  }
}

export { computeErrorInfo };

/**
 * An insert's last attempt failed without an answer that it made nothing: no answer at all, or a 5xx other
 * than a stockout (503 insufficientCapacity, classified quota). A 4xx, a 408 or 429 included, is an insert
 * answered before it was made (a delete is another matter: pass.ts refusedOutright). Earlier attempts are
 * the caller's to count.
 */
function mayHaveActed(err: unknown): boolean {
  if (!(err instanceof ProviderError) || err.kind === 'quota') return false;
  return err.status === undefined || err.status >= 500;
}
