// Zone operations: what insert/delete/stop/start return, polled with zoneOperations.get or .wait.
// A failure that GCE only discovers after accepting the request (quota, stockout) is reported inside
// the Operation (`error.errors[].code`, `httpErrorStatusCode`) with HTTP 200, as on GCE.
import type { IdSource } from './ids.js';
import { link, operationPath, zonePath } from './links.js';

export type OperationStatus = 'PENDING' | 'RUNNING' | 'DONE';

export interface OperationFailure {
  code: string;
  message: string;
  httpStatus: number;
  httpMessage: string;
  errorDetails?: unknown[];
}

export interface OperationRecord {
  id: string;
  name: string;
  project: string;
  zone: string;
  operationType: string;
  targetLink: string;
  targetId: string;
  status: OperationStatus;
  progress: number;
  insertTime: Date;
  startTime: Date;
  endTime?: Date;
  statusMessage?: string;
  failure?: OperationFailure;
  user: string;
}

export interface NewOperation {
  project: string;
  zone: string;
  operationType: string;
  targetLink: string;
  targetId: string;
  statusMessage?: string;
  user?: string;
}

/** DONE operations beyond this many are forgotten, oldest first (GCE also expires them). */
const RETAINED = 20_000;

export class OperationStore {
  private readonly ops = new Map<string, OperationRecord>();
  private readonly waiters = new Map<OperationRecord, Set<() => void>>();

  constructor(
    private readonly ids: IdSource,
    private readonly now: () => Date,
  ) {}

  create(input: NewOperation): OperationRecord {
    const at = this.now();
    const op: OperationRecord = {
      id: this.ids.id(),
      name: this.ids.operationName(at.getTime()),
      status: 'RUNNING',
      progress: 0,
      insertTime: at,
      startTime: at,
      user: input.user ?? 'proxyplane@local.iam.gserviceaccount.com',
      ...input,
    };
    this.ops.set(`${op.project}/${op.zone}/${op.name}`, op);
    this.prune();
    return op;
  }

  get(project: string, zone: string, name: string): OperationRecord | undefined {
    return this.ops.get(`${project}/${zone}/${name}`);
  }

  /** Every retained operation of one zone, in no particular order. */
  inZone(project: string, zone: string): OperationRecord[] {
    return [...this.ops.values()].filter((op) => op.project === project && op.zone === zone);
  }

  complete(op: OperationRecord, failure?: OperationFailure): void {
    if (op.status === 'DONE') return;
    op.status = 'DONE';
    op.progress = 100;
    op.endTime = this.now();
    if (failure) op.failure = failure;
    const waiting = this.waiters.get(op);
    this.waiters.delete(op);
    for (const wake of waiting ?? []) wake();
  }

  /** Resolves when the operation is DONE, after `timeoutMs`, or when `signal` aborts. */
  wait(op: OperationRecord, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (op.status === 'DONE' || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const waiting = this.waiters.get(op) ?? new Set<() => void>();
      this.waiters.set(op, waiting);
      const finish = () => {
        clearTimeout(timer);
        waiting.delete(finish);
        signal?.removeEventListener('abort', finish);
        resolve();
      };
      const timer = setTimeout(finish, timeoutMs);
      waiting.add(finish);
      signal?.addEventListener('abort', finish, { once: true });
    });
  }

  /** Wakes every waiter (emulator shutdown or reset) and forgets all operations. */
  clear(): void {
    for (const set of this.waiters.values()) for (const wake of [...set]) wake();
    this.waiters.clear();
    this.ops.clear();
  }

  private prune(): void {
    if (this.ops.size <= RETAINED) return;
    for (const [key, op] of this.ops) {
      if (this.ops.size <= RETAINED) break;
      if (op.status === 'DONE') this.ops.delete(key);
    }
  }
}

/** The Operation's top-level fields, for checking a list filter (GCE rejects unknown ones). */
export const OPERATION_FIELDS: ReadonlySet<string> = new Set([
  'kind',
  'id',
  'creationTimestamp',
  'name',
  'description',
  'zone',
  'clientOperationId',
  'operationType',
  'targetLink',
  'targetId',
  'status',
  'statusMessage',
  'user',
  'progress',
  'insertTime',
  'startTime',
  'endTime',
  'error',
  'warnings',
  'httpErrorStatusCode',
  'httpErrorMessage',
  'selfLink',
  'region',
  'operationGroupId',
]);

export function toOperationResource(op: OperationRecord): Record<string, unknown> {
  const resource: Record<string, unknown> = {
    kind: 'compute#operation',
    id: op.id,
    name: op.name,
    zone: link(zonePath(op.project, op.zone)),
    operationType: op.operationType,
    targetLink: op.targetLink,
    targetId: op.targetId,
    status: op.status,
    user: op.user,
    progress: op.progress,
    insertTime: op.insertTime.toISOString(),
    startTime: op.startTime.toISOString(),
    selfLink: link(operationPath(op.project, op.zone, op.name)),
  };
  if (op.statusMessage) resource.statusMessage = op.statusMessage;
  if (op.endTime) resource.endTime = op.endTime.toISOString();
  if (op.failure) {
    resource.error = {
      errors: [
        {
          code: op.failure.code,
          message: op.failure.message,
          ...(op.failure.errorDetails ? { errorDetails: op.failure.errorDetails } : {}),
        },
      ],
    };
    resource.httpErrorStatusCode = op.failure.httpStatus;
    resource.httpErrorMessage = op.failure.httpMessage;
  }
  return resource;
}
