// Idempotent acquire: the `Idempotency-Key` header's rules, free of I/O (docs/leases.md § Idempotent
// acquire). A key is scoped to the caller that sent it (its holder name, never its token) and bound to
// the request it came with: the stored record names the lease and a digest of the request, never the
// grant itself (that carries the proxy's credentials) — a replay rebuilds the answer from the lease.
// The canonical strings here are hashed (SHA-256) by the lease service: the domain does no crypto.
import type { AcquireRequest } from './wire.js';

/** 1–128 characters a header, a log line and a shell all take as they are: a UUID fits. */
export const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/;
export const IDEMPOTENCY_KEY_MAX = 128;

/** How long a key answers with its lease after the first grant; after that it is a new key. */
export const IDEMPOTENCY_WINDOW_MS = 10 * 60_000;

export const isIdempotencyKey = (key: string): boolean => IDEMPOTENCY_KEY.test(key);

/**
 * What the record's id is a digest of: (caller, key), so that two crawlers' keys never meet, and a key
 * (which a client may have made guessable) does not name a document anyone could look up by it.
 */
export function idempotencyScope(holder: string, key: string): string {
  return JSON.stringify(['acquire', holder, key]);
}

/**
 * What makes two acquires "the same request": the validated body with its defaults applied, selector keys
 * sorted and protocols as a set — `{}` and `{"ttlSeconds":300}` are the same request, a different
 * selector, TTL, target, exclusivity or protocol set is not.
 */
export function canonicalAcquire(req: AcquireRequest): string {
  return JSON.stringify([
    Object.entries(req.selector ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    req.ttlSeconds,
    req.target ?? null,
    req.exclusive,
    [...req.protocols].sort(),
  ]);
}

/** A stored key: which lease it granted, for which request, until when it answers. */
export interface IdempotencyRecord {
  leaseId: string;
  requestHash: string;
  expiresAt: Date;
}

export type Replay =
  /** No live record: acquire, writing the record with the grant. */
  | { kind: 'fresh' }
  /** The same request: answer with this lease (if it is still active). */
  | { kind: 'replay'; leaseId: string }
  /** The key came with another request: 422, nothing acquired. */
  | { kind: 'mismatch' };

/** What a stored record (or none) means for a request with this hash at `now`. */
export function replayOf(record: IdempotencyRecord | null, requestHash: string, now: Date): Replay {
  if (!record || record.expiresAt.getTime() <= now.getTime()) return { kind: 'fresh' };
  if (record.requestHash !== requestHash) return { kind: 'mismatch' };
  return { kind: 'replay', leaseId: record.leaseId };
}
