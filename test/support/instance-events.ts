// What the Compute emulator built and deleted, from its log, in the order the set of instances changed
// (instances-api.ts, state.ts). Unlike admin.counters(), which counts API requests, an insert answered
// 409 (a duplicate or concurrent delivery re-creating the same deterministic name, which Pub/Sub's
// at-least-once delivery allows) or deduplicated by its requestId builds nothing and logs nothing here;
// and unlike sampling admin.instances(), nothing short-lived is missed.
import type { EmulatorLog } from '../../emulators/compute/log.js';

export interface InstanceEvent {
  kind: 'inserted' | 'deleted';
  labels: Record<string, string>;
}

export interface InstanceEventLog {
  /** Pass as the emulator's `log`. */
  log: EmulatorLog;
  events: InstanceEvent[];
  /** Instances built (`inserted`) or deleted for the proxy with this uid, since `from` (an events.length). */
  count(kind: InstanceEvent['kind'], uid: string, from?: number): number;
}

export function recordInstanceEvents(): InstanceEventLog {
  const events: InstanceEvent[] = [];
  return {
    events,
    log: (_severity, message, fields) => {
      if (message === 'instance inserted' || message === 'instance deleted')
        events.push({
          kind: message === 'instance inserted' ? 'inserted' : 'deleted',
          labels: (fields?.labels ?? {}) as Record<string, string>,
        });
    },
    count: (kind, uid, from = 0) =>
      events.slice(from).filter((e) => e.kind === kind && e.labels['proxyplane-uid'] === uid).length,
  };
}

/** The most instances carrying `proxyplane-uid = uid` that existed at the same time, from the event log. */
export function peakInstances(events: readonly InstanceEvent[], uid: string): number {
  let now = 0;
  let peak = 0;
  for (const e of events) {
    if (e.labels['proxyplane-uid'] !== uid) continue;
    now += e.kind === 'inserted' ? 1 : -1;
    peak = Math.max(peak, now);
  }
  return peak;
}
