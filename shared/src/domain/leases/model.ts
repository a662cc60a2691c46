// The lease model: port of the operator seed §7 (`internal/lease/`), made durable. A lease occupies one
// slot of a proxy's spec.capacity (an exclusive lease occupies the whole proxy) until it is released or
// its expiresAt passes — expiry is decided by the clock on every read, never by a sweep.
import { z } from 'zod';

/** What a crawler reports after using a lease. rate_limited and banned start a cooldown. */
export const LeaseResult = z.enum(['ok', 'rate_limited', 'banned']);
export type LeaseResult = z.infer<typeof LeaseResult>;

/**
 * The cooldown key used when neither the report nor the lease names a target (seed §7: "target falls
 * back: report → lease → global"). Targets are validated never to equal it.
 */
export const GLOBAL_TARGET = '*';

/** Ours are 32 hex digits (the API's newLeaseId); the wider shape still admits ids issued before that. */
const LEASE_ID = /^[A-Za-z0-9_-]{16,64}$/;
/** Firestore reserves document ids like `__x__` and fails a read of one: such an id is no lease of ours. */
const RESERVED_ID = /^__.*__$/;

/** Whether `id` can name a lease: the service answers any other unknown_lease, the client never sends one. */
export const isLeaseId = (id: string): boolean => LEASE_ID.test(id) && !RESERVED_ID.test(id);

/** A lease as stored: the record a crawler holds by its id. */
export interface Lease {
  id: string;
  proxy: string;
  /**
   * metadata.uid of the proxy it was granted on (instance.ts): a proxy created again under the same name is
   * another proxy. null on a lease stored before uids were recorded (it belongs to the name, as it did).
   */
  proxyUid: string | null;
  /** The site the crawler means to fetch; null = not given (cooldowns then fall back to global). */
  target: string | null;
  /**
   * Where the proxy listened when the lease was granted (endpoint.ts endpointKey): a renewal is refused once
   * it listens elsewhere. null on a lease stored before endpoints were recorded (renewed as it was).
   */
  endpoint: string | null;
  exclusive: boolean;
  /** Name of the bearer token that acquired it ("anonymous" when auth is off), for audit. */
  holder: string;
  /** The TTL granted or last renewed with. */
  ttlSeconds: number;
  grantedAt: Date;
  expiresAt: Date;
  releasedAt: Date | null;
  renewals: number;
}

/** One active lease as kept in the per-proxy lease state (just enough to count capacity). */
export interface LeaseEntry {
  leaseId: string;
  expiresAt: Date;
  exclusive: boolean;
  /** The lease's proxyUid; absent on entries stored before uids were recorded (they count by name). */
  proxyUid?: string;
}

/** A cooldown of (proxy, target) started by a rate_limited / banned report. */
export interface Cooldown {
  proxy: string;
  /**
   * metadata.uid of the proxy the reported lease was granted on (instance.ts): the cooldown keeps only that
   * instance out, not a proxy created again under its name. null on a cooldown stored before uids were
   * recorded, or reported on a lease that had none: it applies to whatever proxy has the name.
   */
  proxyUid: string | null;
  /** A target or GLOBAL_TARGET. */
  target: string;
  until: Date;
  reason: Exclude<LeaseResult, 'ok'>;
  leaseId: string;
  reportedAt: Date;
}

/** Tunables with the seed's meaning; entry points load them from the environment. */
export interface LeaseSettings {
  /** How long a rate_limited / banned report keeps (proxy, target) out, and how long an ended lease still resolves. */
  cooldownWindowMs: number;
}

export const TTL_BOUNDS = { min: 5, max: 3600, default: 300 } as const;
export const DEFAULT_COOLDOWN_WINDOW_MS = 5 * 60_000;

/** The end of a lease's life: released or expired, whichever came first. */
export function leaseEnd(lease: Pick<Lease, 'expiresAt' | 'releasedAt'>): Date {
  const { expiresAt, releasedAt } = lease;
  return releasedAt && releasedAt < expiresAt ? releasedAt : expiresAt;
}

/**
 * Until when a lease id still resolves for a report: CooldownWindow past its end, because a late report
 * arrives exactly when the proxy is being rate-limited (seed §7). Also the Firestore TTL field's value.
 */
export function resolvableUntil(
  lease: Pick<Lease, 'expiresAt' | 'releasedAt'>,
  settings: LeaseSettings,
): Date {
  return new Date(leaseEnd(lease).getTime() + settings.cooldownWindowMs);
}

export function isActive(lease: Pick<Lease, 'expiresAt' | 'releasedAt'>, now: Date): boolean {
  return lease.releasedAt === null && lease.expiresAt.getTime() > now.getTime();
}

/** A renewal extends a lease to now + ttl; it never shortens one. */
export function renewedExpiry(lease: Pick<Lease, 'expiresAt'>, ttlSeconds: number, now: Date): Date {
  const wanted = now.getTime() + ttlSeconds * 1000;
  return new Date(Math.max(wanted, lease.expiresAt.getTime()));
}
