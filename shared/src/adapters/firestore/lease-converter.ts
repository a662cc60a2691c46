// Lease-service documents ⇄ domain values. Documents are flat and use Timestamps so that they read well
// in the Firestore console; decoding is defensive because anyone with console access can edit them.
import { type DocumentData, Timestamp } from '@google-cloud/firestore';
import { z } from 'zod';
import {
  type Cooldown,
  type Lease,
  type LeaseEntry,
  LeaseResult,
  leaseEnd,
} from '../../domain/leases/model.js';
import { ProxyName } from '../../domain/proxy.js';
import { LEASE_STATE_RETENTION_MS, TTL_FIELD } from './lease-collections.js';

const ts = z.instanceof(Timestamp).transform((t) => t.toDate());

const LeaseDoc = z.object({
  leaseId: z.string(),
  proxy: z.string(),
  // Absent on leases stored before uids were recorded: they belong to the proxy's name (instance.ts).
  proxyUid: z
    .string()
    .nullish()
    .transform((u) => u ?? null),
  target: z.string().nullable(),
  // Absent on leases stored before endpoints were recorded: renewed whatever the proxy's address.
  endpoint: z
    .string()
    .nullish()
    .transform((e) => e ?? null),
  exclusive: z.boolean(),
  holder: z.string(),
  ttlSeconds: z.number(),
  grantedAt: ts,
  expiresAt: ts,
  releasedAt: ts.nullable(),
  renewals: z.number(),
});

const EntryDoc = z.object({
  leaseId: z.string(),
  expiresAt: ts,
  exclusive: z.boolean(),
  proxyUid: z.string().optional(),
});
const StateDoc = z.object({ entries: z.array(EntryDoc) });

const CooldownDoc = z.object({
  proxy: z.string(),
  // Absent on cooldowns stored before uids were recorded: they apply to the proxy's name (instance.ts).
  proxyUid: z
    .string()
    .nullish()
    .transform((u) => u ?? null),
  target: z.string(),
  until: ts,
  reason: LeaseResult.exclude(['ok']),
  leaseId: z.string(),
  reportedAt: ts,
});

export function encodeLease(lease: Lease, expireAt: Date): DocumentData {
  return {
    leaseId: lease.id,
    proxy: lease.proxy,
    proxyUid: lease.proxyUid,
    target: lease.target,
    endpoint: lease.endpoint,
    exclusive: lease.exclusive,
    holder: lease.holder,
    ttlSeconds: lease.ttlSeconds,
    grantedAt: Timestamp.fromDate(lease.grantedAt),
    expiresAt: Timestamp.fromDate(lease.expiresAt),
    releasedAt: lease.releasedAt ? Timestamp.fromDate(lease.releasedAt) : null,
    // min(expiresAt, releasedAt): active leases are exactly those with endsAt > now (one range query).
    endsAt: Timestamp.fromDate(leaseEnd(lease)),
    renewals: lease.renewals,
    [TTL_FIELD]: Timestamp.fromDate(expireAt),
  };
}

export function decodeLease(data: DocumentData | undefined): Lease | null {
  const parsed = LeaseDoc.safeParse(data);
  if (!parsed.success) return null;
  const { leaseId, ...rest } = parsed.data;
  return { id: leaseId, ...rest };
}

/**
 * The proxy a lease document names, read alone: one edited into something decodeLease refuses still says
 * which lease state holds its entry. null when it names no proxy (nor anything a document id could be).
 */
export function leaseProxyOf(data: DocumentData | undefined): string | null {
  const parsed = ProxyName.safeParse(data?.proxy);
  return parsed.success ? parsed.data : null;
}

export function encodeState(proxy: string, entries: readonly LeaseEntry[], now: Date): DocumentData {
  const last = entries.reduce((m, e) => Math.max(m, e.expiresAt.getTime()), now.getTime());
  return {
    proxy,
    entries: entries.map((e) => ({
      leaseId: e.leaseId,
      expiresAt: Timestamp.fromDate(e.expiresAt),
      exclusive: e.exclusive,
      ...(e.proxyUid === undefined ? {} : { proxyUid: e.proxyUid }),
    })),
    activeLeases: entries.length,
    updatedAt: Timestamp.fromDate(now),
    [TTL_FIELD]: Timestamp.fromMillis(last + LEASE_STATE_RETENTION_MS),
  };
}

/** The field of leaseState/{proxy} where the snapshot planner claims a proxy it assigns to a worker. */
export const GATEWAY_CLAIM_FIELD = 'gatewayClaim';
const ClaimDoc = z.object({ epoch: z.number().int().min(0), owner: z.string(), claimedAt: ts });

/**
 * The planner's claim (domain/workers/leasable.ts `gatewayClaimSettled`), as fields to update an existing
 * state with: entries are left as they are (none of the proxy's own instance active, or the planner would
 * not assign; a deleted namesake's may be, and run out unrenewable: domain/leases/instance.ts), and the
 * document's expiry is pushed out to a full retention from now, past any expired entry's.
 */
export function encodeGatewayClaim(epoch: number, owner: string, now: Date): DocumentData {
  return {
    [GATEWAY_CLAIM_FIELD]: { epoch, owner, claimedAt: Timestamp.fromDate(now) },
    [TTL_FIELD]: Timestamp.fromMillis(now.getTime() + LEASE_STATE_RETENTION_MS),
  };
}

/** A new lease state holding nothing but the planner's claim (the proxy was never leased). */
export function encodeClaimedState(proxy: string, epoch: number, owner: string, now: Date): DocumentData {
  return { ...encodeState(proxy, [], now), ...encodeGatewayClaim(epoch, owner, now) };
}

/**
 * The epoch of the planner's claim; null when there is none. A claim that does not parse (a hand edit)
 * holds the proxy (+Infinity: no view ever settles it) until the planner claims it again — fail closed.
 */
export function decodeGatewayClaim(data: DocumentData | undefined): number | null {
  const raw = data?.[GATEWAY_CLAIM_FIELD];
  if (raw === undefined || raw === null) return null;
  const parsed = ClaimDoc.safeParse(raw);
  return parsed.success ? parsed.data.epoch : Number.POSITIVE_INFINITY;
}

/** null when the document is not a lease state: the caller treats that proxy as unknown and re-reads. */
export function decodeState(data: DocumentData | undefined): LeaseEntry[] | null {
  const parsed = StateDoc.safeParse(data);
  return parsed.success ? parsed.data.entries : null;
}

export function encodeCooldown(c: Cooldown): DocumentData {
  return {
    proxy: c.proxy,
    proxyUid: c.proxyUid,
    target: c.target,
    until: Timestamp.fromDate(c.until),
    reason: c.reason,
    leaseId: c.leaseId,
    reportedAt: Timestamp.fromDate(c.reportedAt),
    [TTL_FIELD]: Timestamp.fromDate(c.until),
  };
}

export function decodeCooldown(data: DocumentData | undefined): Cooldown | null {
  const parsed = CooldownDoc.safeParse(data);
  return parsed.success ? parsed.data : null;
}

const KeyDoc = z.object({
  leaseId: z.string(),
  requestHash: z.string(),
  expireAt: ts,
  createdAt: ts.optional(),
  replayedAt: ts.optional(),
});

/**
 * leaseKeys/{id}: the lease an Idempotency-Key granted and the digest of its request — never the grant
 * itself, whose proxy URL carries credentials (a replay rebuilds it from the lease). `expireAt` is both
 * the end of the key's window and the TTL policy's field.
 */
export function encodeKey(
  key: { leaseId: string; requestHash: string; expiresAt: Date },
  createdAt: Date,
): DocumentData {
  return {
    leaseId: key.leaseId,
    requestHash: key.requestHash,
    createdAt: Timestamp.fromDate(createdAt),
    [TTL_FIELD]: Timestamp.fromDate(key.expiresAt),
  };
}

/** The field markReplayed sets: a replay has answered with the record's lease. */
export const REPLAYED_FIELD = 'replayedAt';

export function decodeKey(
  data: DocumentData | undefined,
): { leaseId: string; requestHash: string; expiresAt: Date; grantedAt: Date; replayed: boolean } | null {
  const parsed = KeyDoc.safeParse(data);
  if (!parsed.success) return null;
  const { leaseId, requestHash, expireAt, createdAt, replayedAt } = parsed.data;
  return {
    leaseId,
    requestHash,
    expiresAt: expireAt,
    grantedAt: createdAt ?? new Date(0),
    replayed: replayedAt !== undefined,
  };
}
