// One snapshot pass, decided (observe → decide → act; this is the decide): the pool as it should be, the
// ownership plan, and for every live worker what its next snapshot is built from — its grant, the proxies
// it owns and is not draining, and the drains under way (revokeProxyIds). Pure: the function's handler
// observes, calls this, and acts.

import { type GatewayRoute, MAX_SNAPSHOT_PROXIES } from '../../messages/gateway-snapshot.js';
import { WORKER_LIMITS } from '../../messages/worker-api.js';
import { selects } from '../gateway/routing.js';
import type { ProxyInstance } from '../leases/instance.js';
import { type ProxyResource, proxyProtocol } from '../proxy.js';
import { type AckOwed, ackOverdue } from '../workers/ack-owed.js';
import { drainedAt } from '../workers/drain.js';
import { nextGrant } from '../workers/grants.js';
import {
  applyOwnership,
  assignableWorkers,
  drainingFrom,
  type OwnershipPlan,
  type OwnershipRecord,
  ownedBy,
  type PlanInput,
  planOwnership,
  recordOf,
  recordsByOwner,
  type WorkerStanding,
} from '../workers/ownership.js';
import { readsSocks5 } from '../workers/protocol.js';
import { balancedOwners } from '../workers/route-balance.js';
import { isLive, type WorkerSession } from '../workers/session.js';
import type { WorkerSettings } from '../workers/settings.js';
import type { StoredReport } from '../workers/usable-capacity.js';
import { carriesTraffic } from './content.js';
import { withinDrainBudget } from './drain-budget.js';
import { capShares, type ShareCap } from './share-cap.js';

export interface WorkerView {
  session: WorkerSession;
  report: StoredReport | null;
  /** The grant recorded in the worker's snapshot header (null: never sent one). */
  grantedUntil: Date | null;
  /** The ACK the header records this session owes (workers/ack-owed.ts); absent: none recorded for it. */
  ackOwed?: AckOwed | null;
}

export interface PassInput {
  now: Date;
  /** Proxies whose spec says gatewayPool (being deleted or not). */
  poolSpecs: readonly ProxyResource[];
  reclaimed: ReadonlySet<string>;
  /** Proxies with active leases of their own instance (asked only for leaseCandidates()). */
  leased: ReadonlySet<string>;
  epoch: number;
  records: ReadonlyMap<string, OwnershipRecord>;
  workers: ReadonlyMap<string, WorkerView>;
  /** The gateway routing the snapshots carry: ownership gives every worker its share of each route. */
  routing: readonly GatewayRoute[];
  settings: WorkerSettings;
}

export interface WorkerBuild {
  workerId: string;
  sessionId: string;
  /** The protocol the worker's session speaks: what its snapshot may contain (workers/protocol.ts). */
  protocolVersion: number;
  grant: Date;
  owned: ProxyResource[];
  draining: Record<string, number>;
}

export interface PassPlan {
  ownership: OwnershipPlan;
  records: Map<string, OwnershipRecord>;
  builds: WorkerBuild[];
  /**
   * Live workers owing an ACK past max_stale_age (logged), and whether they are withheld: given nothing,
   * their grants not renewed (not when no worker takes snapshots: overdueWorkers).
   */
  overdue: Array<{ workerId: string; withheld: boolean } & AckOwed>;
  /**
   * The route balance's shares held within what one snapshot may carry (share-cap.ts): the workers it
   * gave more than MAX_SNAPSHOT_PROXIES (logged), and the proxies moved or left unassigned for it.
   */
  cap: ShareCap;
  /** Moves the balance wanted that wait for drains to end: their owners already drain as many as a runtime
   *  report carries (drain-budget.ts), logged so that a worker filling slowly says why. */
  drainsHeld: number;
}

/**
 * Pool proxies that may be handed to a worker in this pass: only those need their leases checked — the
 * leases of that instance (name and uid: a deleted proxy's leases do not hold back one created again under
 * its name; domain/leases/instance.ts). Unowned or draining, in the pool (not being deleted, not
 * reclaimed: planPass's `inPool`), and with a worker that could take it — assignable (withheld or not:
 * a superset of planPass's) and, for a SOCKS5 proxy, of a protocol that reads SOCKS5. A proxy left out has
 * no desired owner in this pass, so its leases decide nothing; read anyway, a fleet with no gateway up (or
 * SOCKS5 proxies and only older gateways) cost a lease read per pool proxy twice a tick. The converse does
 * not hold: an unowned proxy the share cap leaves to nobody (every worker that may own it full:
 * share-cap.ts) is still read, every pass, for as long as the pool outgrows the workers' room.
 */
export function leaseCandidates(
  x: Pick<PassInput, 'poolSpecs' | 'records' | 'reclaimed' | 'workers' | 'now'>,
): ProxyInstance[] {
  const takers = [...x.workers.values()].filter((w) => assignable(w, x.now));
  const anyTaker = takers.length > 0;
  const socksTaker = takers.some((w) => readsSocks5(w.session.protocolVersion));
  return x.poolSpecs
    .filter((p) => {
      const r = x.records.get(p.name);
      if (r && r.drainEpoch === null) return false;
      if (!inPoolNow(p, x.reclaimed, x.records)) return false;
      return speaksSocks5(p) ? socksTaker : anyTaker;
    })
    .map((p) => ({ name: p.name, uid: p.uid }));
}

/**
 * Whether the proxy's name is still owned for another proxy — one deleted, this one created under its name
 * since (ownership.ts OwnershipRecord.uid). Out of the pool until that record goes: the old proxy's drain
 * runs to its end (the tunnels through a deleted proxy cut at the drain's bound, not kept for as long as
 * they last on a drain cancelled), and this one, given out afresh, starts on no tunnel or count of its own.
 */
const succeeds = (p: ProxyResource, records: ReadonlyMap<string, OwnershipRecord>): boolean => {
  const r = records.get(p.name);
  return r !== undefined && !recordOf(r, p.uid);
};

/** Whether a pool proxy is in the pool this pass: not being deleted, not reclaimed, not succeeding another. */
const inPoolNow = (
  p: ProxyResource,
  reclaimed: ReadonlySet<string>,
  records: ReadonlyMap<string, OwnershipRecord>,
): boolean => p.deletionRequestedAt === null && !reclaimed.has(p.name) && !succeeds(p, records);

/** Whether the gateway talks SOCKS5 to the proxy. */
export const speaksSocks5 = (p: ProxyResource): boolean => proxyProtocol(p) === 'socks5';

/** A worker shutting down reports draining: still live, no longer given proxies. */
const shuttingDown = (w: WorkerView) =>
  w.report?.draining === true && w.report.sessionId === w.session.sessionId;

/**
 * Whether the worker may be given proxies: a live session that has ACKed a snapshot and is not shutting
 * down (and is not withheld for snapshots it does not take: overdueWorkers). Live alone is not enough: a
 * session is live from its registration, and the route balance counted a new worker short in every
 * route, drained proxies off serving workers toward it, and its first snapshot granted them — a worker
 * that died before taking that snapshot (a crash at start, a snapshot it cannot apply) left them serving
 * nobody until the grant lapsed, and a crash loop under new worker ids did it again every cycle. Until its
 * first ACK it still gets its snapshot (builds below), so it can ACK it, and that ACK asks for a pass
 * (functions/api/src/workers/session-service.ts).
 */
export const assignable = (w: WorkerView, now: Date): boolean =>
  isLive(w.session, now) && w.session.ackedVersion !== null && !shuttingDown(w);

/**
 * The live workers that owe an ACK past max_stale_age (workers/ack-owed.ts): they have stopped taking
 * their snapshots, or cannot say that they took them. Each is withheld — given no proxies and no renewed
 * grant, so what it owns moves once the grant it was given lapses — while some other worker still takes
 * its snapshots: an assignable one that owes nothing older than the resend period (30 s; a worker that
 * takes its snapshots ACKs each within a second or two). When none does, none is: a fault every worker
 * sees at once (a release whose snapshots no gateway applies, the ACK path broken) is the controller's or
 * the channel's, and draining toward nobody would only lapse every session (the drains move the epoch,
 * and reports on the old one are refused) and hand the pool out again from scratch once it is fixed; left
 * as they are, the workers serve again from the first snapshot they take. (Counting a worker whose debt is
 * merely younger than max_stale_age as taking withheld the ones whose debt began a tick earlier, the ACK
 * path broken between a tick's publish and some of its ACKs.)
 */
export function overdueWorkers(x: PassInput): PassPlan['overdue'] {
  const owing: Array<{ workerId: string } & AckOwed> = [];
  const owes = (w: WorkerView, seconds: number) =>
    ackOverdue(w.ackOwed, w.session.ackedVersion, x.now, seconds);
  let anyTaking = false;
  for (const [id, w] of x.workers) {
    if (!isLive(w.session, x.now)) continue;
    if (w.ackOwed && owes(w, x.settings.maxStaleAgeSeconds)) owing.push({ workerId: id, ...w.ackOwed });
    else if (assignable(w, x.now) && !owes(w, x.settings.resendAfterMs / 1000)) anyTaking = true;
  }
  return owing.sort((a, b) => (a.workerId < b.workerId ? -1 : 1)).map((o) => ({ ...o, withheld: anyTaking }));
}

/**
 * Whether some record is already at the next epoch while the state is not: an ownership commit split
 * into chunks holds the epoch until its last chunk (functions/snapshot/src/pass.ts), so a pass cut off
 * between them, or whose re-plan after a lease race left nothing for the last one, leaves the earlier
 * chunks' records at epoch + 1. The epoch must move to them even with nothing left to change: snapshots
 * built at the old epoch would carry records newer than themselves — every report on them fails those
 * records' epoch (zero usable capacity), a drain started there is never seen drained, and the chunks'
 * lease claims never settle — until some unrelated change of ownership moved it.
 */
export function heldEpoch(records: Iterable<OwnershipRecord>, epoch: number): boolean {
  // Exactly the next one: a record edited by hand to some far epoch must not move the epoch on every pass.
  const next = epoch + 1;
  for (const r of records) if (r.since === next || r.drainEpoch === next) return true;
  return false;
}

/**
 * `cap`: the most proxies one worker may be given (MAX_SNAPSHOT_PROXIES; smaller only in tests);
 * `maxDraining`: the most one worker may be draining for a move it could have kept (WORKER_LIMITS.maxCounts,
 * what its runtime report carries: drain-budget.ts) — also the report size past which one is read as
 * possibly cut (reportCut below), as the two are one limit.
 */
export function planPass(
  x: PassInput,
  cap: number = MAX_SNAPSHOT_PROXIES,
  maxDraining: number = WORKER_LIMITS.maxCounts,
): PassPlan {
  const inPool = x.poolSpecs.filter((p) => inPoolNow(p, x.reclaimed, x.records));
  const uids = new Map(inPool.map((p) => [p.name, p.uid]));
  const pool = inPool.map((p) => p.name);
  const overdue = overdueWorkers(x);
  const withheld = new Set(overdue.filter((o) => o.withheld).map((o) => o.workerId));
  const standing = new Map<string, WorkerStanding>();
  for (const [id, w] of x.workers) {
    standing.set(id, {
      assignable: assignable(w, x.now) && !withheld.has(id),
      grantedUntil: w.grantedUntil,
    });
  }
  const socks = new Set(x.poolSpecs.filter(speaksSocks5).map((p) => p.name));
  const socksStanding = new Map<string, WorkerStanding>();
  for (const [id, w] of standing) {
    const reads = readsSocks5(x.workers.get(id)!.session.protocolVersion);
    socksStanding.set(id, reads ? w : { ...w, assignable: false });
  }
  const httpWorkers = assignableWorkers(standing);
  const socksWorkers = assignableWorkers(socksStanding);
  const balance = inPool.map((p) => ({
    name: p.name,
    attributes: p.spec.attributes,
    // An unowned proxy held back by its leases reaches no worker's snapshot until they end: it covers no
    // route. Only unowned ones: a draining one is lease-checked too (leaseCandidates), but an owned one
    // is not once its drain is cancelled, so counting the leases there would cancel the drain one pass
    // and start it again the next, for as long as they last.
    serving: carriesTraffic(p) && !(x.leased.has(p.name) && !x.records.has(p.name)),
    eligible: socks.has(p.name) ? socksWorkers : httpWorkers,
    excludedFrom: p.status.unreachableRoutes,
    current: x.records.get(p.name)?.owner ?? null,
  }));
  // No worker's share past what its snapshot may carry (MAX_SNAPSHOT_PROXIES): a worker given more could
  // take no snapshot at all. The balance fills a full worker's missing routes by swaps only; capShares
  // trims what it still gives past the cap — owners already over it, a pool larger than the workers' room.
  const capped = capShares(
    balancedOwners(balance, x.routing, cap),
    balance.map((b) => ({ ...b, draining: (x.records.get(b.name)?.drainEpoch ?? null) !== null })),
    cap,
  );
  const { desired } = capped;
  // A report is cut to maxDraining (WORKER_LIMITS.maxCounts) entries, draining ones first (the gateway's
  // reporting.ts reportedCounts). Full of proxies its worker is draining (or no longer owns), it may have
  // left busy draining ones out, and one absent is not read as drained: released, it would have two
  // owners while the old one's tunnels still ran. Drains the budget cannot hold back (deleted, reclaimed)
  // may number more than a report carries. One entry the worker owns and is not draining shows the cut
  // fell past every draining one. Worked out once per worker and pass.
  const cutOf = new Map<string, boolean>();
  const reportCut = (id: string, w: WorkerView): boolean => {
    let cut = cutOf.get(id);
    if (cut === undefined) {
      const counts = w.report?.counts ?? [];
      cut =
        counts.length >= maxDraining &&
        counts.every((c) => {
          const r = x.records.get(c.proxy);
          return !r || r.owner !== id || r.drainEpoch !== null;
        });
      cutOf.set(id, cut);
    }
    return cut;
  };
  const common: Omit<PlanInput, 'pool' | 'records' | 'workers'> = {
    epoch: x.epoch,
    desired,
    blocked: (p) => x.leased.has(p),
    drained: (proxy, worker, since) => {
      const w = x.workers.get(worker);
      return (
        !!w &&
        drainedAt(proxy, since, {
          session: w.session,
          report: w.report,
          now: x.now,
          reportTtlMs: x.settings.reportTtlMs,
          reportCut: reportCut(worker, w),
        })
      );
    },
    now: x.now,
    skewMs: x.settings.skewMs,
    uidOf: (proxy) => uids.get(proxy),
  };
  const ofSocks = (want: boolean) => new Map([...x.records].filter(([proxy]) => socks.has(proxy) === want));
  const plans = [
    planOwnership({
      ...common,
      pool: pool.filter((p) => !socks.has(p)),
      records: ofSocks(false),
      workers: standing,
    }),
    planOwnership({
      ...common,
      pool: pool.filter((p) => socks.has(p)),
      records: ofSocks(true),
      workers: socksStanding,
    }),
  ];
  // Both plans number their changes x.epoch + 1: together they are one change of ownership.
  const planned = plans
    .flatMap((p) => p.changes)
    .sort((a, b) => (a.proxy < b.proxy ? -1 : a.proxy > b.proxy ? 1 : 0));
  // No worker draining more than its report carries for moves it could have kept (drain-budget.ts): a
  // proxy it may still own (eligible) that some other worker is wanted for.
  const eligibleFor = new Map(balance.map((b) => [b.name, b.eligible]));
  const attributesOf = new Map(balance.map((b) => [b.name, b.attributes]));
  // Moves of proxies a narrow route selects go first: the new worker's share of a small route should not
  // wait drain cycles behind the default route's, answering that route 503 no_upstream meanwhile.
  const narrow = x.routing.map((r) => r.selector ?? {}).filter((sel) => Object.keys(sel).length > 0);
  const { changes, held: drainsHeld } = withinDrainBudget({
    changes: planned,
    records: x.records,
    voluntary: (proxy, owner) => !!desired.get(proxy) && !!eligibleFor.get(proxy)?.includes(owner),
    maxDraining,
    cap,
    priority: (proxy) => {
      const a = attributesOf.get(proxy) ?? {};
      return narrow.some((sel) => selects(sel, a)) ? 0 : 1;
    },
  });
  const moves = changes.length > 0 || heldEpoch(x.records.values(), x.epoch);
  const ownership: OwnershipPlan = { epoch: moves ? x.epoch + 1 : x.epoch, changes };
  const records = applyOwnership(x.records, ownership.changes);
  const byName = new Map(x.poolSpecs.map((p) => [p.name, p]));
  const builds: WorkerBuild[] = [];
  const byOwner = recordsByOwner(records.values());
  for (const [id, w] of [...x.workers].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!isLive(w.session, x.now)) continue;
    // A worker shutting down stopped pulling at SIGTERM and ends its drain at the grant it holds: a renewal
    // would never reach it, and would only put off the moment its proxies are free should it exit with
    // anything in flight (or its last report be lost). It still gets a snapshot when its content changes
    // (its drains recorded: revokeProxyIds), on the grant it has — none, when it never had one. So does a
    // withheld worker: renewing its grant in snapshots it does not take kept its proxies from everyone
    // else for as long as it reported. It must still get one it can ACK, though, to be given proxies again:
    // one whose grant was swept (a day without an epoch change) gets one granting nothing past now.
    // Nor is the grant renewed for a session that has ACKed nothing yet while the worker owns proxies: a
    // worker withheld for snapshots it cannot take has its reports refused once the epoch moves, its
    // session lapses and it registers again — a new session, no debt yet, renewed at once, lapsing in turn:
    // the grant never ran out, and its proxies, draining toward workers that serve, never moved. A session
    // that takes its snapshots ACKs within seconds, and the pass that ACK asks for renews it.
    const held = withheld.has(id);
    const mine = byOwner.get(id) ?? [];
    const unproven = w.session.ackedVersion === null && mine.length > 0;
    const grant =
      nextGrant(w.grantedUntil, !shuttingDown(w) && !held && !unproven, x.now, x.settings) ??
      (held || unproven ? x.now : null);
    if (!grant) continue;
    const owned = ownedBy(id, mine).flatMap((r) => {
      const p = byName.get(r.proxy);
      // Owned but no longer in the pool spec is already draining; a deleted or reclaimed one drains too.
      return p && inPoolNow(p, x.reclaimed, records) ? [p] : [];
    });
    builds.push({
      workerId: id,
      sessionId: w.session.sessionId,
      protocolVersion: w.session.protocolVersion,
      grant,
      owned,
      draining: Object.fromEntries(drainingFrom(id, mine)),
    });
  }
  return { ownership, records, builds, overdue, cap: capped.cap, drainsHeld };
}
