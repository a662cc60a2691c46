// A small TTL cache in front of any SecretReader, for readers that must not call Secret Manager per use
// (the lease service, the probe; the gateway, whose CredentialCache is its cache, sets ttlMs 0 and keeps
// only the sharing of concurrent reads: with nothing that may answer from a copy, no copy is kept).
// Concurrent misses share one fetch; a transient failure is never cached (a refusal for good only with
// failureTtlMs, the probe's); with staleIfErrorMs a transient failure
// may serve the last value a little longer, so a Secret Manager blip does not take the data path down.
// A copy's age is the wall clock's now less when it was read; one read "after" now (the clock stepped
// back) is of no known age and answers nothing — neither fresh nor stale — until a read replaces it.
// Values live only in memory and are never logged.
import type { SecretRef } from '../../domain/proxy.js';
import type { Clock } from '../../ports/clock.js';
import { SecretAccessError, type SecretReader } from '../../ports/secrets.js';
import { withDeadline } from '../deadline.js';

export interface SecretCacheOptions {
  ttlMs: number;
  clock: Clock;
  /** Least recently used entries go first beyond this. */
  maxEntries?: number;
  /** After the TTL, how long a cached value may still answer when refreshing fails transiently. */
  staleIfErrorMs?: number;
  /**
   * How long a read may go unanswered before it counts as a transient failure (so a value within
   * staleIfErrorMs answers instead). The read goes on, and what it brings is kept when it lands. Unbounded,
   * a Secret Manager that stopped answering held every caller for the client's own timeout and retries (60 s
   * for AccessSecretVersion) before the stale value was served — every lease acquire, once a minute's TTL
   * had passed.
   */
  readDeadlineMs?: number;
  /**
   * The deadline of a read with no copy within staleIfErrorMs to answer instead (readDeadlineMs if unset).
   * The probe's is longer than its readDeadlineMs: a cold instance's first read, which may take over a
   * second, cut at 1 s with nothing to serve lost every credentialed proxy's pass.
   */
  missDeadlineMs?: number;
  /**
   * How long Secret Manager's refusal of a version for good (not found, denied, disabled) answers for it
   * without asking again; 0, the default, asks every time. The probe's: without it, a secret its account
   * may not read was asked for at every check of every proxy naming it — Secret Manager accesses (billed)
   * and quota at the fleet's check rate, for as long as the grant was missing. A refusal is forgotten
   * when a read of the same reference succeeds, and on invalidate.
   */
  failureTtlMs?: number;
}

interface Refusal {
  error: SecretAccessError;
  at: number;
}

interface Entry {
  value: string;
  fetchedAt: number;
}

const keyOf = (ref: SecretRef) => `${ref.secret}/versions/${ref.version}`;

export class CachedSecretReader implements SecretReader {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<string>>();
  private readonly refusals = new Map<string, Refusal>();
  private generation = 0;
  private sweptAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly inner: SecretReader,
    private readonly opts: SecretCacheOptions,
  ) {}

  async access(ref: SecretRef): Promise<string> {
    const key = keyOf(ref);
    const now = this.opts.clock.now().getTime();
    const hit = this.entries.get(key);
    if (hit && this.within(hit, now, this.opts.ttlMs)) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    const refused = this.refusals.get(key);
    if (refused) {
      if (this.withinMs(refused.at, now, this.opts.failureTtlMs ?? 0)) throw refused.error;
      this.refusals.delete(key);
    }
    // A copy within stale-if-error may answer a transient failure (a read past its deadline is one).
    const stale = hit !== undefined && this.within(hit, now, this.keepForMs());
    try {
      const loading = this.load(key, ref);
      const ms = stale ? this.opts.readDeadlineMs : (this.opts.missDeadlineMs ?? this.opts.readDeadlineMs);
      return await (ms === undefined
        ? loading
        : withDeadline(
            loading,
            ms,
            () => new SecretAccessError('transient', key, `Secret ${key}: no answer within ${ms} ms`),
          ));
    } catch (err) {
      const retryable = err instanceof SecretAccessError && err.retryable;
      if (stale && retryable && this.entries.get(key) === hit) return hit.value;
      throw err;
    }
  }

  /** Forgets one secret (every version reference to it), or all. Nothing in production calls it today. */
  invalidate(secret?: string): void {
    this.generation += 1;
    for (const map of [this.entries, this.inflight, this.refusals] as Array<Map<string, unknown>>) {
      for (const key of [...map.keys()]) {
        if (secret === undefined || key.startsWith(`${secret}/versions/`)) map.delete(key);
      }
    }
  }

  private load(key: string, ref: SecretRef): Promise<string> {
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const generation = this.generation;
    const promise = this.inner.access(ref).then(
      (value) => {
        if (this.inflight.get(key) === promise) this.inflight.delete(key);
        // A value fetched before an invalidation may already be stale: hand it out once, keep nothing.
        if (generation === this.generation) this.store(key, value);
        return value;
      },
      (err: unknown) => {
        if (this.inflight.get(key) === promise) this.inflight.delete(key);
        // Secret Manager said the version is gone (disabled, destroyed, not found, denied): the value kept
        // is dropped, so that a transient failure right after cannot bring it back as stale-if-error — a
        // disabled password handed out for up to staleIfErrorMs after it was seen disabled.
        if (err instanceof SecretAccessError && !err.retryable) {
          this.entries.delete(key);
          if (generation === this.generation) this.refuse(key, err);
        }
        throw err;
      },
    );
    this.inflight.set(key, promise);
    return promise;
  }

  /**
   * Whether a copy is younger than ms. Its age is never negative: a copy read "after" now (the wall clock
   * stepped back, NTP) would otherwise count as fresh until the clock caught up again — for as long as the
   * step, a value Secret Manager may have changed meanwhile; with ttlMs 0 (the gateway) its one reason to
   * be read again was the clock moving on.
   */
  private within(entry: Entry, now: number, ms: number): boolean {
    return this.withinMs(entry.fetchedAt, now, ms);
  }

  private withinMs(at: number, now: number, ms: number): boolean {
    const age = now - at;
    return age >= 0 && age < ms;
  }

  private refuse(key: string, error: SecretAccessError): void {
    const ttl = this.opts.failureTtlMs ?? 0;
    if (ttl <= 0) return;
    const now = this.opts.clock.now().getTime();
    // Kept in the order they were refused: the expired ones are at the front.
    for (const [k, r] of this.refusals) {
      if (this.withinMs(r.at, now, ttl)) break;
      this.refusals.delete(k);
    }
    this.refusals.delete(key);
    this.refusals.set(key, { error, at: now });
    const max = this.opts.maxEntries ?? 1000;
    while (this.refusals.size > max) this.refusals.delete(this.refusals.keys().next().value as string);
  }

  /** How long a copy may answer at all: its TTL, then stale-if-error. */
  private keepForMs(): number {
    return this.opts.ttlMs + (this.opts.staleIfErrorMs ?? 0);
  }

  private store(key: string, value: string): void {
    // Nothing may answer from a copy (the gateway's ttlMs 0, no stale-if-error): keep none, not even the
    // latest read's password.
    this.refusals.delete(key);
    if (this.keepForMs() <= 0) return;
    const now = this.opts.clock.now().getTime();
    this.sweep(now);
    this.entries.delete(key);
    this.entries.set(key, { value, fetchedAt: now });
    const max = this.opts.maxEntries ?? 1000;
    while (this.entries.size > max) this.entries.delete(this.entries.keys().next().value as string);
  }

  /**
   * Drops what can no longer answer: past its TTL and its stale-if-error time (or read "after" now, the
   * clock stepped back), an entry is only ever replaced by a fresh read. Rotations pin new versions, so without this a long-lived reader (a gateway
   * running for weeks) held every version it ever read — old, perhaps revoked, passwords — until the LRU
   * bound pushed them out. At most once a TTL: a pass over every entry, not one per read.
   */
  private sweep(now: number): void {
    const since = now - this.sweptAt;
    if (since >= 0 && since < this.opts.ttlMs) return;
    this.sweptAt = now;
    const keepFor = this.keepForMs();
    for (const [key, entry] of this.entries) if (!this.within(entry, now, keepFor)) this.entries.delete(key);
  }

  /** How many values are held (tests, and operators' eyes through a debugger). */
  get size(): number {
    return this.entries.size;
  }
}
