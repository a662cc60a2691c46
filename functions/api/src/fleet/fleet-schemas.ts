// The JSON of GET /fleet/api/state and GET /fleet/api/proxies/{name} as zod schemas: what /openapi.json
// publishes for them (fleet-openapi.ts), and where the types view-model.ts and detail.ts build come from
// (z.infer), so that the document, the view model and the CLI reading it (`proxyplane fleet watch`) are one
// contract and cannot drift. Every timestamp is an RFC 3339 string here: these schemas describe the JSON as
// sent, not the domain's Dates.
import { z } from '@hono/zod-openapi';
import { Condition, Phase, ProxyName, ProxyStatus } from '../../../../shared/src/domain/proxy.js';
import { Spec } from '../routes/proxy-schemas.js';

const Timestamp = z.iso.datetime();
const Count = z.number().int();
const Verdict = z.enum(['AVAILABLE', 'SUSPECT', 'UNHEALTHY']);
const Tracks = z.record(z.string(), Verdict.nullable());

/** One proxy's gateway ownership record (ownership/shard-NN `proxies.<name>`). */
export const OwnershipView = z
  .object({
    owner: z.string().openapi({ description: 'The gateway worker id that owns the proxy' }),
    since: Count.openapi({ description: 'The ownership epoch it was granted in (0 when unreadable)' }),
    drainEpoch: Count.nullable().openapi({
      description: 'Set while the owner hands the proxy over (draining): the epoch the drain began in',
    }),
  })
  .openapi('FleetOwner');
export type OwnershipView = z.infer<typeof OwnershipView>;

export const FleetRow = z
  .object({
    name: ProxyName,
    mode: z.enum(['managed', 'external']),
    location: z.string().openapi({
      description:
        'The zone of a managed proxy; host:port of an external one, prefixed `socks5://` when it speaks SOCKS5',
    }),
    attributes: z.record(z.string(), z.string()),
    phase: Phase,
    deleting: z.boolean().openapi({ description: 'Deletion was requested (the phase may not say so yet)' }),
    cordoned: z.literal(true).optional().openapi({
      description:
        'Only when so: an operator cordoned it (spec.cordoned): no new leases, renewals or gateway work; what runs finishes',
    }),
    ip: z.string().nullable(),
    healthy: z.boolean().nullable().openapi({
      description: 'The Healthy condition as reconcile last folded it into status; null: no such condition',
    }),
    healthyReason: z.string().optional().openapi({
      description:
        "The Healthy condition's reason (absent with the condition): ProbeSuspect or PassiveSuspect is a SUSPECT verdict — still Healthy, ranked below the AVAILABLE proxies — which the page shows as `suspect`",
    }),
    verdict: Verdict.nullable().openapi({ description: "The probe's proxy-level verdict; null: none yet" }),
    tiers: Tracks.openapi({
      description: 'The verdict of each health track (BASIC, EGRESS, TARGET:<route>)',
    }),
    egressProblem: z.string().nullable(),
    latencyMillis: z.number().nullable(),
    latencyHistory: z.array(z.number()).openapi({
      description: 'The last reported latencies (ms), oldest first: reports only, not every probe',
    }),
    capacity: Count,
    activeLeases: Count.openapi({ description: 'Its capacity when `leaseStateInvalid` (it counts as full)' }),
    leaseStateInvalid: z.literal(true).optional().openapi({
      description:
        'Only when so: its lease state document does not decode (edited by hand); no lease is granted on it until the document is fixed or deleted',
    }),
    cooldowns: z.array(z.object({ target: z.string(), until: Timestamp, reason: z.string() })).openapi({
      description: 'The running cooldowns of this proxy instance',
    }),
    owner: OwnershipView.nullable(),
    unreachableRoutes: z.array(z.string()).openapi({
      description:
        'Gateway routes whose target check keeps failing through the proxy: it is left out of those',
    }),
    createdAt: Timestamp,
    changedAt: Timestamp.openapi({ description: 'The newest status-affecting moment ("updated 5s ago")' }),
  })
  .openapi('FleetRow');
export type FleetRow = z.infer<typeof FleetRow>;

export const JobView = z
  .object({
    job: z.string(),
    startedAt: Timestamp,
    finishedAt: Timestamp.nullable(),
    ok: z.boolean().nullable(),
    counts: z.record(z.string(), z.number()),
    error: z.string().nullable(),
  })
  .openapi('FleetJob');
export type JobView = z.infer<typeof JobView>;

export const FleetView = z
  .object({
    generatedAt: Timestamp,
    rows: z.array(FleetRow).openapi({ description: 'One per proxy, by name' }),
    phases: z.partialRecord(Phase, Count).openapi({
      description: 'How many proxies are in each phase (a phase no proxy is in is absent)',
    }),
    jobs: z.array(JobView).openapi({ description: "The periodic jobs' last runs, by name" }),
  })
  .openapi('FleetState', {
    description:
      "The fleet page's view: what GET /fleet/api/state answers and the `fleet` event of GET /fleet/events carries",
  });
export type FleetView = z.infer<typeof FleetView>;

export const FleetEvent = z.object({
  at: Timestamp,
  kind: z.enum(['created', 'condition', 'health', 'latency', 'cooldown', 'deletion']),
  text: z.string(),
});
export type FleetEvent = z.infer<typeof FleetEvent>;

/** A proxy's status as JSON: the domain's ProxyStatus with its Dates as the strings JSON makes of them. */
export const StatusJson = ProxyStatus.extend({
  conditions: z.array(Condition.extend({ lastTransitionTime: Timestamp })),
  lastHealthCheckTime: Timestamp.nullable(),
  nextReconcileAt: Timestamp.nullable(),
});
export type StatusJson = z.infer<typeof StatusJson>;

export const ProxyDetail = z
  .object({
    row: FleetRow,
    spec: Spec,
    status: StatusJson.openapi({ description: 'As stored, and as GET /v1/proxies/{name} gives it' }),
    generation: Count,
    uid: z.string(),
    health: z
      .object({
        verdict: Verdict.nullable(),
        tracks: z.record(
          z.string(),
          z.object({ verdict: Verdict.nullable(), consecutiveOk: Count, consecutiveFail: Count }),
        ),
        latencyReportedMs: z.number().nullable(),
        latencyReportedAt: Timestamp.nullable(),
        transitionAt: Timestamp.nullable(),
        history: z.array(z.object({ ms: z.number(), at: Timestamp })),
      })
      .nullable()
      .openapi({ description: "The probe's health document; null before its first probe" }),
    leases: z
      .array(z.object({ leaseId: z.string(), expiresAt: Timestamp, exclusive: z.boolean() }))
      .openapi({ description: 'The active leases of this proxy instance' }),
    events: z.array(FleetEvent).openapi({
      description:
        'Recent events, newest first (at most 30), derived from the timestamps the plane stores: none is written to make this list',
    }),
  })
  .openapi('FleetProxyDetail');
export type ProxyDetail = z.infer<typeof ProxyDetail>;
