// What the fleet page, its SSE stream and `proxyplane fleet watch` show: one row per proxy, built purely
// from the documents the plane already writes (proxies, health, leaseState, cooldowns, ownership, jobRuns)
// and the time. No field here is new state: "recent events" are derived from timestamps already stored.
import { hostPort } from '../../../../shared/src/domain/endpoint-host.js';
import { healthInstanceKey } from '../../../../shared/src/domain/health/instance-key.js';
import type { LatencySample, ProxyHealthState } from '../../../../shared/src/domain/health/proxy-health.js';
import { SUSPECT_REASONS } from '../../../../shared/src/domain/health/verdict-reason.js';
import { cooldownsOf } from '../../../../shared/src/domain/leases/cooldown.js';
import { ofInstance, type ProxyInstance } from '../../../../shared/src/domain/leases/instance.js';
import type { Cooldown, LeaseEntry } from '../../../../shared/src/domain/leases/model.js';
import { isCordoned, type Phase, type ProxyResource } from '../../../../shared/src/domain/proxy.js';
import { recordOf } from '../../../../shared/src/domain/workers/ownership.js';
import type { JobRun } from '../../../../shared/src/ports/job-runs.js';
import type { FleetRow, FleetView, JobView, OwnershipView } from './fleet-schemas.js';

// The types of what is built here are the schemas' (fleet-schemas.ts), which /openapi.json publishes: a field
// added here and not there, or the other way round, does not compile.
export type { FleetRow, FleetView, JobView, OwnershipView };
/** An ownership record as stored: the view, and the uid of the proxy it was given for (none on older ones). */
export type StoredOwnership = OwnershipView & { uid?: string | null };

/** A leaseState document that does not decode (edited by hand): the lease service counts the proxy full. */
export const UNREADABLE_STATE = 'unreadable';
/** What the fleet page says of such a proxy (the server-rendered row and the script's, one text). */
export const UNREADABLE_STATE_TITLE =
  'its lease state document does not decode (edited by hand): it counts as full, and no lease is granted on it until the document is fixed or deleted';

/**
 * The Healthy cell of the page (the server-rendered row and the script's, one rule): `suspect` for a
 * SUSPECT verdict (Healthy=True, a reason in SUSPECT_REASONS: the gateways or the probe see failures), else
 * `yes` / `no`; the condition's reason is its title. null: no Healthy condition.
 */
export function healthyCell(r: Pick<FleetRow, 'healthy' | 'healthyReason'>): {
  text: 'yes' | 'suspect' | 'no';
  cls: 'ok' | 'suspect' | 'bad';
  title: string;
} | null {
  if (r.healthy === null) return null;
  const title = r.healthyReason ?? '';
  if (!r.healthy) return { text: 'no', cls: 'bad', title };
  return SUSPECT_REASONS.has(title)
    ? { text: 'suspect', cls: 'suspect', title }
    : { text: 'yes', cls: 'ok', title };
}

/** What the fleet page says of a cordoned proxy (the server-rendered row and the script's, one text). */
export const CORDONED_TITLE =
  'cordoned (spec.cordoned): no new leases, renewals or gateway work; what runs finishes — proxies uncordon NAME gives it work again';

export interface FleetInputs {
  proxies: ReadonlyMap<string, ProxyResource>;
  health: ReadonlyMap<string, ProxyHealthState>;
  leaseState: ReadonlyMap<string, readonly LeaseEntry[] | typeof UNREADABLE_STATE>;
  cooldowns: readonly Cooldown[];
  ownership: ReadonlyMap<string, StoredOwnership>;
  jobRuns: readonly JobRun[];
}

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/** The active entries of proxy instance `uid`: not those of a deleted proxy of the same name. */
export function activeEntries(
  entries: readonly LeaseEntry[] | typeof UNREADABLE_STATE | undefined,
  uid: string,
  now: Date,
): LeaseEntry[] {
  if (entries === UNREADABLE_STATE) return [];
  return ofInstance(entries ?? [], uid).filter((e) => e.expiresAt.getTime() > now.getTime());
}

/** The running cooldowns of proxy instance `proxy`: not those of a deleted proxy of the same name. */
export function activeCooldowns(all: readonly Cooldown[], proxy: ProxyInstance, now: Date): Cooldown[] {
  return cooldownsOf(all, proxy).filter((c) => c.until.getTime() > now.getTime());
}

/**
 * The proxy's health state when it is about the instance its status describes, as reconcile reads it
 * (reconcile/conditions.ts verdictFor); undefined otherwise. `health/{name}` is keyed by name: during a
 * managed replacement (no running instance, key '') or after an external proxy was deleted and created
 * again under its name, the stored state is the previous instance's — its tiers, verdict, latency and
 * history say nothing of this one.
 */
export function healthOf(
  p: ProxyResource,
  inputs: Pick<FleetInputs, 'health'>,
): ProxyHealthState | undefined {
  const h = inputs.health.get(p.name);
  if (!h) return undefined;
  const key = healthInstanceKey(p);
  return key !== '' && h.instance === key ? h : undefined;
}

export function buildRow(p: ProxyResource, inputs: FleetInputs, now: Date): FleetRow {
  const h = healthOf(p, inputs);
  const healthy = p.status.conditions.find((c) => c.type === 'Healthy');
  const times = [
    p.createdAt,
    p.deletionRequestedAt,
    h?.transitionAt,
    ...p.status.conditions.map((c) => c.lastTransitionTime),
  ];
  const changedAt = times.reduce<Date>((m, t) => (t && t > m ? t : m), p.createdAt);
  const tiers: FleetRow['tiers'] = {};
  for (const [k, v] of Object.entries(h?.tracks ?? {})) tiers[k] = v?.verdict ?? null;
  const history: LatencySample[] = h?.latencyHistory ?? [];
  const leases = inputs.leaseState.get(p.name);
  return {
    name: p.name,
    mode: p.spec.mode,
    location: locationOf(p.spec),
    attributes: { ...p.spec.attributes },
    phase: p.status.phase,
    deleting: p.deletionRequestedAt !== null,
    ...(isCordoned(p) ? { cordoned: true as const } : {}),
    ip: p.status.ip,
    healthy: healthy ? healthy.status === 'True' : null,
    ...(healthy ? { healthyReason: healthy.reason } : {}),
    verdict: h?.verdict ?? null,
    tiers,
    egressProblem: h?.egressProblem ?? null,
    latencyMillis: p.status.latencyMillis ?? h?.latency.reportedMs ?? null,
    latencyHistory: history.map((s) => s.ms),
    capacity: p.spec.capacity,
    // An unreadable lease state counts as full (the lease service fails closed): shown so, and said so —
    // the page showed 0 leases, as if its document were absent.
    activeLeases: leases === UNREADABLE_STATE ? p.spec.capacity : activeEntries(leases, p.uid, now).length,
    ...(leases === UNREADABLE_STATE ? { leaseStateInvalid: true as const } : {}),
    cooldowns: activeCooldowns(inputs.cooldowns, p, now).map((c) => ({
      target: c.target,
      until: c.until.toISOString(),
      reason: c.reason,
    })),
    owner: ownerOf(inputs.ownership.get(p.name), p.uid),
    unreachableRoutes: [...(p.status.unreachableRoutes ?? [])],
    createdAt: p.createdAt.toISOString(),
    changedAt: changedAt.toISOString(),
  };
}

export function buildFleetView(inputs: FleetInputs, now: Date): FleetView {
  // Each row is handed its own proxy's cooldowns, grouped in one pass: scanning them all for every row
  // was proxies × cooldowns on every rebuild of a watched page.
  const cooldownsByProxy = new Map<string, Cooldown[]>();
  for (const c of inputs.cooldowns) {
    const list = cooldownsByProxy.get(c.proxy);
    if (list) list.push(c);
    else cooldownsByProxy.set(c.proxy, [c]);
  }
  const rows = [...inputs.proxies.values()]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((p) => buildRow(p, { ...inputs, cooldowns: cooldownsByProxy.get(p.name) ?? [] }, now));
  const phases: Partial<Record<Phase, number>> = {};
  for (const r of rows) phases[r.phase] = (phases[r.phase] ?? 0) + 1;
  const jobs = [...inputs.jobRuns]
    .sort((a, b) => a.job.localeCompare(b.job))
    .map(
      (j): JobView => ({
        job: j.job,
        startedAt: j.startedAt.toISOString(),
        finishedAt: iso(j.finishedAt),
        ok: j.ok,
        counts: j.counts,
        error: j.error,
      }),
    );
  return { generatedAt: now.toISOString(), rows, phases, jobs };
}

/** A managed proxy's zone; an external one's host:port, prefixed `socks5://` when it speaks SOCKS5. */
function locationOf(spec: ProxyResource['spec']): string {
  if (spec.mode === 'managed') return spec.zone;
  const { host, port, protocol } = spec.endpoint;
  return `${protocol === 'http' ? '' : `${protocol}://`}${hostPort(host, port)}`;
}

/**
 * The owner of this proxy, not of one deleted under its name whose drain still runs: its record keeps the
 * other uid (shared/src/domain/workers/ownership.ts recordOf), as the lease service reads it.
 */
function ownerOf(o: StoredOwnership | undefined, uid: string): OwnershipView | null {
  if (!o || !recordOf(o, uid)) return null;
  return { owner: o.owner, since: o.since, drainEpoch: o.drainEpoch };
}
