// The log lines Terraform counts (terraform/monitoring.tf: log-based metrics and the alerts on them), by
// `event`, with the fields each line must carry. Three tests hold the chain together, so that renaming an
// event or one of its fields anywhere breaks one of them instead of silencing an alert:
// - test/terraform/log-contract.test.ts: every metric's filter names an event listed here, and every
//   jsonPayload field it filters on or extracts (labels, values) is listed for that event; every event
//   here is counted; docs/operations.md § The log contract lists exactly these events and fields;
// - each emitter's own test checks its line with `missingContractFields` (reconcile, gc, probe,
//   passive pass, provider calls, the snapshot pass, the gateway's snapshot-age and traffic lines, the
//   lease routes' and discovery's 503s).
// A field of a nested object is named by its path (`outcomes.noUpstream`), as a metric reads it
// (`jsonPayload.outcomes.noUpstream`).
// The code stays the source of truth: it logs each event with its literal name (code-contract.test.ts reads
// the level from those calls); this list is what the metrics may rely on.

export const LOG_CONTRACT = {
  'proxy.failed': ['proxy', 'failureReason', 'detail'],
  'proxy.cloud_init_error': ['proxy', 'branch', 'detail'],
  'proxy.boot_slow': ['proxy', 'zone', 'bootingMinutes'],
  'provider.quota_exceeded': ['proxy', 'zone'],
  'gc.deleted': ['providerId', 'uid', 'zone'],
  'gateway.snapshot_age': ['workerId', 'ageSeconds'],
  'gateway.traffic': ['workerId', 'requests', 'outcomes.noUpstream', 'outcomeQueueDrops', 'suspectFallbacks'],
  'passive.worker_suspect': ['workerId', 'proxies', 'failing'],
  'provider.request': ['provider', 'op', 'result', 'latencyMs'],
  'probe.result': ['proxy', 'tier', 'ok', 'latencyMs', 'code'],
  'gateway.route_failed_open': ['routes'],
  'leases.store_unavailable': ['op', 'reason'],
  'leases.credentials_unreadable': ['proxy', 'secret'],
  'job.tick_failed': ['job', 'error'],
  'job.tick': ['job'],
  'probe.pass_budget_spent': ['budgetMs', 'undecided'],
  'probe.credentials_unavailable': ['proxies', 'judgedDead'],
  'reconcile.drift_poll_failed': ['proxy', 'pass'],
} as const satisfies Record<string, readonly string[]>;

export type CountedEvent = keyof typeof LOG_CONTRACT;

/**
 * What a logged line (as Cloud Logging's jsonPayload would hold it: the parsed JSON) lacks of its event's
 * contract: the event itself when it is not a counted one, else the fields that are absent or undefined.
 * A field logged as null is present (`detail` may be).
 */
export function missingContractFields(line: Record<string, unknown>): string[] {
  const event = line.event;
  if (typeof event !== 'string' || !(event in LOG_CONTRACT)) return [`event ${String(event)}`];
  return LOG_CONTRACT[event as CountedEvent].filter((f) => fieldAt(line, f) === undefined);
}

/** The value at a dotted path of the line (`outcomes.noUpstream`), undefined when any step is missing. */
function fieldAt(line: Record<string, unknown>, path: string): unknown {
  let v: unknown = line;
  for (const step of path.split('.')) {
    if (typeof v !== 'object' || v === null || !Object.hasOwn(v, step)) return undefined;
    v = (v as Record<string, unknown>)[step];
  }
  return v;
}
