// A proxy's detail for the page: its spec and status as stored, its health tracks, active leases and
// cooldowns, and "recent events" derived from the timestamps the plane already keeps (status conditions'
// lastTransitionTime, health transitionAt and latency reports, cooldown reports, creation, deletion) —
// no event is written anywhere to make this list.
import { cooldownsOf } from '../../../../shared/src/domain/leases/cooldown.js';
import type { ProxyResource } from '../../../../shared/src/domain/proxy.js';
import type { FleetEvent, ProxyDetail, StatusJson } from './fleet-schemas.js';
import { activeEntries, buildRow, type FleetInputs, healthOf } from './view-model.js';

// Typed by the schemas /openapi.json publishes (fleet-schemas.ts), as view-model.ts is.
export type { FleetEvent, ProxyDetail };

export const MAX_EVENTS = 30;

export function recentEvents(p: ProxyResource, inputs: FleetInputs, now: Date): FleetEvent[] {
  const events: Array<{ at: Date; kind: FleetEvent['kind']; text: string }> = [
    { at: p.createdAt, kind: 'created', text: `created (${p.spec.mode})` },
  ];
  for (const c of p.status.conditions) {
    const why = c.message ? `: ${c.message}` : '';
    events.push({
      at: c.lastTransitionTime,
      kind: 'condition',
      text: `${c.type}=${c.status} (${c.reason})${why}`,
    });
  }
  const h = healthOf(p, inputs);
  if (h?.transitionAt) {
    const problem = h.egressProblem ? ` (${h.egressProblem})` : '';
    events.push({
      at: h.transitionAt,
      kind: 'health',
      text: `health verdict ${h.verdict ?? 'unknown'}${problem}`,
    });
  }
  for (const s of h?.latencyHistory ?? []) {
    events.push({ at: s.at, kind: 'latency', text: `latency reported: ${s.ms} ms` });
  }
  for (const c of cooldownsOf(inputs.cooldowns, p)) {
    const state = c.until.getTime() > now.getTime() ? `until ${c.until.toISOString()}` : 'ended';
    events.push({
      at: c.reportedAt,
      kind: 'cooldown',
      text: `cooldown for ${c.target} (${c.reason}), ${state}`,
    });
  }
  if (p.deletionRequestedAt)
    events.push({ at: p.deletionRequestedAt, kind: 'deletion', text: 'deletion requested' });
  return events
    .sort((a, b) => b.at.getTime() - a.at.getTime())
    .slice(0, MAX_EVENTS)
    .map((e) => ({ at: e.at.toISOString(), kind: e.kind, text: e.text }));
}

export function buildDetail(p: ProxyResource, inputs: FleetInputs, now: Date): ProxyDetail {
  const h = healthOf(p, inputs);
  return {
    row: buildRow(p, inputs, now),
    spec: p.spec,
    status: statusJson(p.status),
    generation: p.generation,
    uid: p.uid,
    health: h
      ? {
          verdict: h.verdict,
          tracks: Object.fromEntries(
            Object.entries(h.tracks).map(([k, v]) => [
              k,
              {
                verdict: v?.verdict ?? null,
                consecutiveOk: v?.consecutiveOk ?? 0,
                consecutiveFail: v?.consecutiveFail ?? 0,
              },
            ]),
          ),
          latencyReportedMs: h.latency.reportedMs,
          latencyReportedAt: h.latency.reportedAt?.toISOString() ?? null,
          transitionAt: h.transitionAt?.toISOString() ?? null,
          history: (h.latencyHistory ?? []).map((s) => ({ ms: s.ms, at: s.at.toISOString() })),
        }
      : null,
    leases: activeEntries(inputs.leaseState.get(p.name), p.uid, now).map((e) => ({
      leaseId: e.leaseId,
      expiresAt: e.expiresAt.toISOString(),
      exclusive: e.exclusive,
    })),
    events: recentEvents(p, inputs, now),
  };
}

/**
 * The status with its Dates as the strings JSON.stringify made of them (Date.prototype.toJSON is
 * toISOString), so that its type is the JSON's. Keys keep their order (a spread keeps the place of a key it
 * overwrites): the bytes sent are the ones the Dates gave.
 */
function statusJson(s: ProxyResource['status']): StatusJson {
  return {
    ...s,
    conditions: s.conditions.map((c) => ({ ...c, lastTransitionTime: c.lastTransitionTime.toISOString() })),
    lastHealthCheckTime: s.lastHealthCheckTime?.toISOString() ?? null,
    nextReconcileAt: s.nextReconcileAt?.toISOString() ?? null,
  };
}
