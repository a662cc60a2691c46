// Classifying Firestore failures by their gRPC status code (never by message text).
import { setTimeout as sleep } from 'node:timers/promises';

const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;
const FAILED_PRECONDITION = 9;
const DEADLINE_EXCEEDED = 4;
const ABORTED = 10;
const UNAVAILABLE = 14;

function codeOf(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
}

/**
 * Lost a race: the state document changed since it was read (lastUpdateTime precondition → 9), was
 * created meanwhile (create → 6) or deleted by its TTL (update → 5). The caller re-reads and retries.
 */
export function isConflict(err: unknown): boolean {
  const code = codeOf(err);
  return code === FAILED_PRECONDITION || code === ALREADY_EXISTS || code === NOT_FOUND;
}

/** Worth another attempt from a fresh read; the write may or may not have landed. */
export function isTransient(err: unknown): boolean {
  const code = codeOf(err);
  return code === DEADLINE_EXCEEDED || code === ABORTED || code === UNAVAILABLE;
}

/** Full jitter over an exponential cap (5 ms · 2^n, at most 250 ms): spreads replicas that collided. */
export function jitteredBackoff(retry: number): Promise<void> {
  return sleep(Math.random() * Math.min(250, 5 * 2 ** retry));
}
