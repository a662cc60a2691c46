// Upstream proxy credentials: snapshots carry Secret Manager references only; the worker resolves them
// through an injected resolver before a snapshot is swapped in, and keeps the values in memory only.
// Nothing on the hot path ever fetches a secret: a request sees a pre-computed Proxy-Authorization line.
import { withDeadline } from '../../../shared/src/adapters/deadline.js';
import type { SecretRef } from '../../../shared/src/domain/proxy.js';

export interface UpstreamCredentials {
  readonly username: string;
  readonly password: string;
}

/** The port a Secret Manager adapter implements (the controller-session engineer wires the real one). */
export interface CredentialResolver {
  resolve(ref: SecretRef): Promise<UpstreamCredentials>;
}

export class CredentialError extends Error {
  readonly kind = 'credentials_unavailable';
  constructor(
    readonly ref: SecretRef,
    options?: { cause?: unknown },
  ) {
    super(`credentials ${ref.secret}@${ref.version} unavailable`, options);
  }
}

export const refKey = (ref: SecretRef): string => `${ref.secret}@${ref.version ?? 'latest'}`;

/** The Proxy-Authorization value a chained request carries to the upstream, or "" for an open proxy. */
export const proxyAuthorizationValue = (c: UpstreamCredentials | null): string =>
  c ? `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}` : '';

/** The same as a header line, built once per snapshot. */
export const proxyAuthorizationLine = (c: UpstreamCredentials | null): string =>
  c ? `Proxy-Authorization: ${proxyAuthorizationValue(c)}\r\n` : '';

/**
 * How long one reference may take to resolve before the snapshot goes on without it. The Secret Manager
 * client retries UNAVAILABLE and RESOURCE_EXHAUSTED for up to 10 minutes before it fails, and a snapshot is
 * swapped in only once every reference is resolved: unbounded, one slow secret would hold that snapshot and
 * every one after it (they apply in order) until the worker went stale.
 */
export const CREDENTIAL_RESOLVE_TIMEOUT_MS = 10_000;

class ResolveTimeout extends Error {}

/**
 * Caches resolved values — the gateway's one credential cache (the CachedSecretReader below it only
 * shares concurrent reads, control/secret-credentials.ts). Pinned versions never change, so they are kept
 * while snapshots name them; "latest" is re-resolved once older than ttlMs, and a failed refresh keeps the
 * last good value (a Secret Manager blip must not take a working proxy out of rotation). What the snapshot
 * just resolved no longer names is forgotten: a managed proxy's entry names the version its VM serves, so
 * each rotation moves the fleet to a new pinned reference, and the old (perhaps revoked) passwords must not
 * stay for good. Named again, it is read afresh: nothing below keeps a copy to answer with.
 */
export class CredentialCache {
  private readonly entries = new Map<string, { value: UpstreamCredentials; atMs: number; read: number }>();
  /** The keys the latest resolveAll named: a read landing past its bound is kept only for one of these. */
  private named = new Set<string>();
  /** Reads begun, numbered: an answer never replaces one from a read begun after it. */
  private reads = 0;
  /** Reads begun before the last clear() keep nothing. */
  private clearedAt = 0;

  constructor(
    private readonly resolver: CredentialResolver,
    private readonly ttlMs: number,
    /** Milliseconds, for ages only: the gateway gives a monotonic clock (performance.now). */
    private readonly now: () => number,
    /** A reference not resolved within this long counts as failed for this snapshot (last good value kept). */
    private readonly timeoutMs = CREDENTIAL_RESOLVE_TIMEOUT_MS,
  ) {}

  /** Forgets every cached value: the next snapshot resolves afresh (a reloaded snapshot file). */
  clear(): void {
    this.entries.clear();
    this.clearedAt = this.reads;
  }

  async resolveAll(refs: readonly SecretRef[]): Promise<Map<string, UpstreamCredentials | CredentialError>> {
    const unique = new Map(refs.map((r) => [refKey(r), r]));
    this.named = new Set(unique.keys());
    const out = new Map<string, UpstreamCredentials | CredentialError>();
    await Promise.all(
      [...unique].map(async ([key, ref]) => {
        const cached = this.entries.get(key);
        // An age below zero (a clock stepped back) is not fresh: it would hold `latest` for the step too.
        const age = cached ? this.now() - cached.atMs : -1;
        const fresh = cached && ((ref.version ?? 'latest') !== 'latest' || (age >= 0 && age < this.ttlMs));
        if (cached && fresh) {
          out.set(key, cached.value);
          return;
        }
        const read = ++this.reads;
        let reading: Promise<UpstreamCredentials> | undefined;
        try {
          const ms = this.timeoutMs;
          reading = this.resolver.resolve(ref);
          const value = await withDeadline(
            reading,
            ms,
            () => new ResolveTimeout(`no answer within ${ms} ms`),
          );
          this.keep(key, value, read);
          out.set(key, value);
        } catch (cause) {
          // The read itself goes on past the bound; its answer is kept for the next snapshot, if the
          // latest one still names the reference when it lands.
          if (cause instanceof ResolveTimeout)
            reading?.then(
              (value) => {
                if (this.named.has(key)) this.keep(key, value, read);
              },
              () => {},
            );
          out.set(key, cached ? cached.value : new CredentialError(ref, { cause }));
        }
      }),
    );
    for (const key of [...this.entries.keys()]) if (!unique.has(key)) this.entries.delete(key);
    return out;
  }

  private keep(key: string, value: UpstreamCredentials, read: number): void {
    if (read <= this.clearedAt || (this.entries.get(key)?.read ?? 0) > read) return;
    this.entries.set(key, { value, atMs: this.now(), read });
  }
}

/** Standalone mode: values from the snapshot file's `credentials` map, keyed "secret" or "secret@version". */
export class StaticCredentialResolver implements CredentialResolver {
  private values = new Map<string, UpstreamCredentials>();

  replace(map: Readonly<Record<string, UpstreamCredentials>>): void {
    this.values = new Map(Object.entries(map));
  }

  async resolve(ref: SecretRef): Promise<UpstreamCredentials> {
    const v = this.values.get(refKey(ref)) ?? this.values.get(ref.secret);
    if (!v) throw new CredentialError(ref);
    return v;
  }
}
