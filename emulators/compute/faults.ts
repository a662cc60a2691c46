// Injectable failures, driven through the admin endpoint (admin-router.ts) or the handle's `faults`.
// Each reaches the client in GCE's own shape: quota as a synchronous 403 `quotaExceeded` or as
// QUOTA_EXCEEDED inside the insert Operation, a stockout as ZONE_RESOURCE_POOL_EXHAUSTED inside it,
// 5xx as `backendError`, 403 / 429 as the API rate limit (`rateLimitExceeded`), unreachable zones as
// aggregatedList `unreachables`. Probabilistic errors use a seeded generator so a run is repeatable.
import { mulberry32 } from '../../shared/src/testing/seeded-random.js';

export const API_OPERATIONS = [
  'insert',
  'get',
  'list',
  'aggregatedList',
  'delete',
  'stop',
  'start',
  'operationsGet',
  'operationsList',
  'operationsWait',
] as const;
export type ApiOperation = (typeof API_OPERATIONS)[number];

/**
 * sync: HTTP 403 quotaExceeded; async: accepted, then the Operation fails QUOTA_EXCEEDED (403); stockout:
 * accepted, then the Operation fails ZONE_RESOURCE_POOL_EXHAUSTED (503) — how GCE reports a zone out of
 * capacity for the machine type (https://cloud.google.com/compute/docs/resource-error).
 */
export type QuotaMode = 'sync' | 'async' | 'stockout';

export interface QuotaFaultInput {
  count: number;
  mode?: QuotaMode;
  /** GCE quota metric name, e.g. CPUS, INSTANCES, IN_USE_ADDRESSES */
  metric?: string;
  limit?: number;
}

export interface ErrorFaultInput {
  /** fail the next N matching requests */
  count?: number;
  /** or fail each matching request with this probability (0..1) */
  rate?: number;
  code?: number;
  operations?: ApiOperation[];
  seed?: number;
}

export interface QuotaHit {
  mode: QuotaMode;
  metric: string;
  limit: number;
}

export class Faults {
  private quota: (Required<QuotaFaultInput> & { mode: QuotaMode }) | null = null;
  private errors: {
    remaining: number;
    rate: number;
    code: number;
    ops: Set<string> | null;
    random: () => number;
  } | null = null;
  private readonly bootDelays: Array<{ remaining: number; bootDelayMs: number }> = [];
  readonly unreachableZones = new Set<string>();

  setQuota(input: QuotaFaultInput): void {
    this.quota =
      input.count > 0
        ? {
            count: input.count,
            mode: input.mode ?? 'sync',
            metric: input.metric ?? 'CPUS',
            limit: input.limit ?? 24,
          }
        : null;
  }

  /** Consumes one injected quota failure for an insert that passed validation. */
  takeQuota(): QuotaHit | null {
    const q = this.quota;
    if (!q) return null;
    q.count--;
    if (q.count <= 0) this.quota = null;
    return { mode: q.mode, metric: q.metric, limit: q.limit };
  }

  setErrors(input: ErrorFaultInput): void {
    const count = input.count ?? 0;
    const rate = input.rate ?? 0;
    if (count <= 0 && rate <= 0) {
      this.errors = null;
      return;
    }
    this.errors = {
      remaining: count,
      rate,
      code: input.code ?? 503,
      ops: input.operations?.length ? new Set(input.operations) : null,
      random: mulberry32(input.seed ?? 1),
    };
  }

  /** The status (5xx, or 403 / 429) to answer this request with, or null to serve it normally. */
  takeError(op: ApiOperation): number | null {
    const e = this.errors;
    if (!e || (e.ops && !e.ops.has(op))) return null;
    if (e.remaining > 0) {
      e.remaining--;
      if (e.remaining === 0 && e.rate <= 0) this.errors = null;
      return e.code;
    }
    return e.rate > 0 && e.random() < e.rate ? e.code : null;
  }

  /** The next `count` inserts boot in `bootDelayMs` instead of the emulator's default. */
  addSlowBoot(bootDelayMs: number, count: number): void {
    if (count > 0) this.bootDelays.push({ remaining: count, bootDelayMs });
  }

  takeBootDelay(): number | null {
    const head = this.bootDelays[0];
    if (!head) return null;
    head.remaining--;
    if (head.remaining <= 0) this.bootDelays.shift();
    return head.bootDelayMs;
  }

  clear(): void {
    this.quota = null;
    this.errors = null;
    this.bootDelays.length = 0;
    this.unreachableZones.clear();
  }

  describe(): Record<string, unknown> {
    return {
      quota: this.quota,
      errors: this.errors && {
        remaining: this.errors.remaining,
        rate: this.errors.rate,
        code: this.errors.code,
        operations: this.errors.ops ? [...this.errors.ops] : null,
      },
      slowBoots: this.bootDelays.map((b) => ({ ...b })),
      unreachableZones: [...this.unreachableZones],
    };
  }
}
