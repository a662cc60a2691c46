// instances.insert / get / delete / stop / start with GCE's semantics: insert is asynchronous (an
// Operation, then the instance boots), a duplicate name is 409 alreadyExists, a retried request with
// the same requestId gets the original Operation back instead of doing the work twice.
import { alreadyExists, GceError, invalidField, quotaExceeded, resourceNotReady } from './errors.js';
import { fingerprintsOf, type InstanceRecord, instanceKey, toInstanceResource } from './instance.js';
import { instancePath, link, zonePath } from './links.js';
import type { OperationRecord } from './operations.js';
import { checkZone, findInstance } from './scope.js';
import type { EmulatorState } from './state.js';
import { validateInsert } from './validate.js';
import { regionOf } from './zones.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const REQUEST_ID_TTL_MS = 60 * 60 * 1000;

/**
 * https://cloud.google.com/compute/docs/api/how-tos/api-requests-responses#request_id — checked
 * before anything else, so a retry of a delete that already succeeded gets its Operation, not a 404.
 */
function withRequestId(
  state: EmulatorState,
  project: string,
  requestId: string | null,
  run: () => OperationRecord,
): OperationRecord {
  if (requestId === null || requestId === '') return run();
  if (!UUID.test(requestId) || /^[0-]+$/.test(requestId)) {
    throw invalidField('requestId', requestId, 'The request ID must be a valid UUID, except the zero UUID.');
  }
  const key = `${project}/${requestId.toLowerCase()}`;
  const at = state.now().getTime();
  const seen = state.requestIds.get(key);
  if (seen && at - seen.at < REQUEST_ID_TTL_MS) return seen.op;
  const op = run();
  state.requestIds.set(key, { op, at });
  if (state.requestIds.size > 50_000) {
    for (const [k, v] of state.requestIds) if (at - v.at >= REQUEST_ID_TTL_MS) state.requestIds.delete(k);
  }
  return op;
}

function quotaMessage(metric: string, limit: number, zone: string): string {
  return `Quota '${metric}' exceeded.  Limit: ${limit.toFixed(1)} in region ${regionOf(zone)}.`;
}

export function insertInstance(
  state: EmulatorState,
  project: string,
  zone: string,
  body: unknown,
  requestId: string | null,
): OperationRecord {
  checkZone(state, project, zone);
  return withRequestId(state, project, requestId, () => {
    const spec = validateInsert(body, project, zone);
    const key = instanceKey(project, zone, spec.name);
    const path = instancePath(project, zone, spec.name);
    if (state.instances.has(key)) throw alreadyExists(path);
    const quota = state.faults.takeQuota();
    if (quota?.mode === 'sync') throw quotaExceeded(quotaMessage(quota.metric, quota.limit, zone));
    const id = state.ids.id();
    const op = state.ops.create({
      project,
      zone,
      operationType: 'insert',
      targetLink: link(path),
      targetId: id,
    });
    if (quota?.mode === 'stockout') {
      // GCE accepts the request, then fails the Operation: no instance is ever created.
      state.lifecycle.schedule(0, () =>
        state.ops.complete(op, {
          code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
          message: `The zone '${zonePath(project, zone)}' does not have enough resources available to fulfill the request.  Try a different zone, or try again later.`,
          httpStatus: 503,
          httpMessage: 'SERVICE UNAVAILABLE',
        }),
      );
      return op;
    }
    if (quota) {
      // GCE accepts the request, then fails the Operation: no instance is ever created.
      const message = quotaMessage(quota.metric, quota.limit, zone);
      state.lifecycle.schedule(0, () =>
        state.ops.complete(op, {
          code: 'QUOTA_EXCEEDED',
          message,
          httpStatus: 403,
          httpMessage: 'FORBIDDEN',
          errorDetails: [
            {
              quotaInfo: {
                metricName: `compute.googleapis.com/${quota.metric.toLowerCase()}`,
                limitName: `${quota.metric}-per-project-region`,
                dimensions: { region: regionOf(zone) },
                limit: quota.limit,
              },
            },
          ],
        }),
      );
      return op;
    }
    const address = state.pool.allocate();
    if (address === null) throw quotaExceeded(quotaMessage('IN_USE_ADDRESSES', state.pool.inUseCount, zone));
    const record: InstanceRecord = {
      project,
      zone,
      spec,
      id,
      createdAt: state.now(),
      status: 'PROVISIONING',
      address,
      proxy: null,
      deleting: false,
      epoch: 0,
      pending: [],
      fingerprints: fingerprintsOf(spec),
    };
    state.instances.set(key, record);
    // Inserted and deleted are logged in the order they change the set of instances: an invariant test
    // replays them to find the most instances a proxy ever had at once, which sampling could miss.
    state.log('INFO', 'instance inserted', { project, zone, name: spec.name, labels: spec.labels ?? {} });
    state.lifecycle.boot(record, state.faults.takeBootDelay() ?? state.timings.bootDelayMs, op);
    return op;
  });
}

export function getInstance(state: EmulatorState, project: string, zone: string, name: string) {
  return toInstanceResource(findInstance(state, project, zone, name));
}

function operationFor(state: EmulatorState, record: InstanceRecord, operationType: string, user?: string) {
  return state.ops.create({
    project: record.project,
    zone: record.zone,
    operationType,
    targetLink: link(instancePath(record.project, record.zone, record.spec.name)),
    targetId: record.id,
    user,
  });
}

export function deleteInstance(
  state: EmulatorState,
  project: string,
  zone: string,
  name: string,
  requestId: string | null,
): OperationRecord {
  checkZone(state, project, zone);
  return withRequestId(state, project, requestId, () => {
    const record = findInstance(state, project, zone, name);
    if (record.spec.deletionProtection) {
      throw new GceError(
        400,
        `Invalid resource usage: 'Resource cannot be deleted if it's protected against deletion.'.`,
        [
          {
            message: `Invalid resource usage: 'Resource cannot be deleted if it's protected against deletion.'.`,
            domain: 'global',
            reason: 'resourceInUseByAnotherResource',
          },
        ],
      );
    }
    // GCE refuses a second delete while the first is still running (400 resourceNotReady, "The resource
    // '…' is not ready"); the gce provider treats that as "already going" (gce-provider.ts delete). A retry
    // with the first call's requestId never gets here: it is answered with that call's Operation.
    if (record.deleting) throw resourceNotReady(instancePath(project, zone, record.spec.name));
    // Nor does it take a delete while the instance's insert Operation is still running (PROVISIONING,
    // STAGING): the same 400 resourceNotReady. The caller tries again once the creation is DONE.
    if (creating(record)) throw resourceNotReady(instancePath(project, zone, record.spec.name));
    const op = operationFor(state, record, 'delete');
    state.lifecycle.delete(record, op);
    return op;
  });
}

/** The instance's insert Operation has not finished: it is still being created. */
const creating = (record: InstanceRecord) =>
  record.pending.some((op) => op.operationType === 'insert' && op.status !== 'DONE');

export function stopInstance(
  state: EmulatorState,
  project: string,
  zone: string,
  name: string,
  requestId: string | null,
): OperationRecord {
  checkZone(state, project, zone);
  return withRequestId(state, project, requestId, () => {
    const record = findInstance(state, project, zone, name);
    const op = operationFor(state, record, 'stop');
    state.lifecycle.stop(record, op);
    return op;
  });
}

export function startInstance(
  state: EmulatorState,
  project: string,
  zone: string,
  name: string,
  requestId: string | null,
): OperationRecord {
  checkZone(state, project, zone);
  return withRequestId(state, project, requestId, () => {
    const record = findInstance(state, project, zone, name);
    if (record.status === 'STOPPING') throw resourceNotReady(instancePath(project, zone, record.spec.name));
    const op = operationFor(state, record, 'start');
    if (record.status === 'TERMINATED') state.lifecycle.start(record, op);
    else state.ops.complete(op);
    return op;
  });
}

/** What the emulator itself does to a VM (guest shutdown, preemption): a system operation. */
export function systemStop(
  state: EmulatorState,
  record: InstanceRecord,
  preempted: boolean,
): OperationRecord {
  const op = operationFor(
    state,
    record,
    preempted ? 'compute.instances.preempted' : 'compute.instances.guestTerminate',
    'system',
  );
  if (preempted) op.statusMessage = 'Instance was preempted.';
  state.lifecycle.stop(record, op, preempted ? 'Instance was preempted.' : undefined);
  return op;
}
