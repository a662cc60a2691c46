// resolveCloudInit (seed §3): what a managed instance boots with — the inline script, a Secret Manager
// secret's payload, or the default script rendered for the proxy's port and credentials — plus the
// credentials secret VERSION the VM will read. The spec hash covers the script's SHA-256 and that version
// name, so rotating either secret replaces the instance, while no secret value reaches Firestore or logs.
import { createHash } from 'node:crypto';
import type { ManagedSpec, ProxyResource, SecretRef } from '../../../shared/src/domain/proxy.js';
import type { CloudInitObservation, Observation } from '../../../shared/src/domain/reconcile/types.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import {
  SecretAccessError,
  type SecretReader,
  type SecretVersionResolver,
} from '../../../shared/src/ports/secrets.js';

/**
 * `fresh`: skip any cache (a rotation or spec event must see the newest versions) — except, with `since`,
 * a read this instance began at or after `since` (the event's publish time): it saw what the event says.
 * So the burst of one request per referencing proxy that a rotation publishes costs each reconcile
 * instance one read per secret, not one per proxy (Secret Manager allows 600 reads a minute).
 */
export interface Freshness {
  fresh: boolean;
  since?: Date;
}

export interface CloudInitResolver {
  /** Never throws. */
  resolve(proxy: ProxyResource & { spec: ManagedSpec }, opts: Freshness): Promise<CloudInitObservation>;
  /**
   * Whether a credentials version an instance booted with can still be read (asked only while a rotation
   * is under way). `fresh` as for resolve: otherwise a `readable` answer may be reused up to the cache
   * TTL, so a fleet waiting out a rotation costs one read per version, not one per proxy per retry; a
   * revocation arrives as a notification, whose pass reads fresh. Never throws; a failure that says
   * nothing about the version is `unknown`.
   */
  versionState(ref: SecretRef, opts: Freshness): Promise<ServedCredentialsState>;
}

export type ServedCredentialsState = NonNullable<Observation['servedCredentials']>;

/** The default startup script (shared/src/domain/cloud-init): pure, so its bytes are stable for the hash. */
export type RenderDefaultCloudInit = (options: {
  port: number;
  credentialsSecret: string;
  connectPorts?: number[];
}) => string;

export interface SecretCloudInitOptions {
  secrets: SecretReader & SecretVersionResolver;
  renderDefault: RenderDefaultCloudInit;
  clock: Clock;
  /** Routine passes (drift polls) reuse what was read this recently; 0 disables the cache. */
  cacheTtlMs: number;
}

const sha256 = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
const refKey = (ref: SecretRef) => `${ref.secret}@${ref.version}`;

class SpecError extends Error {}

export class SecretCloudInitResolver implements CloudInitResolver {
  private readonly versions = new Map<string, { at: number; value: string }>();
  private readonly payloads = new Map<string, { at: number; value: string }>();
  private readonly states = new Map<string, { at: number; value: string }>();

  constructor(private readonly opts: SecretCloudInitOptions) {}

  /** How many answers the caches hold (each within its TTL, or until the next read of its cache). */
  get cachedEntries(): number {
    return this.versions.size + this.payloads.size + this.states.size;
  }

  async resolve(
    proxy: ProxyResource & { spec: ManagedSpec },
    fresh: Freshness,
  ): Promise<CloudInitObservation> {
    const spec = proxy.spec;
    try {
      const credentialsSecret = spec.credentialsRef
        ? await this.cached(this.versions, spec.credentialsRef, fresh, (r) => this.opts.secrets.resolve(r))
        : null;
      const script = await this.script(spec, credentialsSecret, fresh);
      return { ok: true, script, digest: sha256(script), credentialsSecret };
    } catch (err) {
      if (err instanceof SpecError) return { ok: false, failure: { kind: 'spec', message: err.message } };
      if (err instanceof SecretAccessError) {
        // The message names the resource, never the value (ports/secrets.ts).
        const kind = err.retryable ? 'transient' : 'invalid';
        return { ok: false, failure: { kind, message: `${err.kind}: ${err.message}` } };
      }
      throw err;
    }
  }

  async versionState(ref: SecretRef, fresh: Freshness): Promise<ServedCredentialsState> {
    try {
      // Cached like a resolution: only a readable version is (a failure is never remembered).
      await this.cached(this.states, ref, fresh, (r) => this.opts.secrets.resolve(r));
      return 'readable';
    } catch (err) {
      if (!(err instanceof SecretAccessError)) throw err;
      // Disabled, destroyed or deleted: revoked. Denied or transient says nothing about the version.
      return err.kind === 'failed_precondition' || err.kind === 'not_found' ? 'revoked' : 'unknown';
    }
  }

  private async script(
    spec: ManagedSpec,
    credentialsSecret: string | null,
    fresh: Freshness,
  ): Promise<string> {
    const ci = spec.cloudInit;
    if (ci && 'inline' in ci) return ci.inline;
    if (ci) return this.cached(this.payloads, ci.secretRef, fresh, (r) => this.opts.secrets.access(r));
    if (!credentialsSecret) {
      throw new SpecError('the default cloud-init needs spec.credentialsRef (or give spec.cloudInit)');
    }
    try {
      return this.opts.renderDefault({
        port: spec.port,
        credentialsSecret,
        ...(spec.connectPorts ? { connectPorts: spec.connectPorts } : {}),
      });
    } catch (err) {
      throw new SpecError(
        `the default cloud-init cannot be rendered for this spec: ${(err as Error).message}`,
      );
    }
  }

  private async cached(
    cache: Map<string, { at: number; value: string }>,
    ref: SecretRef,
    { fresh, since }: Freshness,
    load: (ref: SecretRef) => Promise<string>,
  ): Promise<string> {
    const now = this.opts.clock.now().getTime();
    const hit = cache.get(refKey(ref));
    // `at`: when the read that cached it began; never reused past the TTL, fresh or not.
    const usable =
      hit !== undefined &&
      now - hit.at < this.opts.cacheTtlMs &&
      (!fresh || (since !== undefined && hit.at >= since.getTime()));
    if (hit && usable) return hit.value;
    let value: string;
    try {
      value = await load(ref);
    } catch (err) {
      // A read that says the reference is unreadable now (disabled, destroyed, gone) outdates what was
      // cached for it: the next routine pass must not find it readable again. A blip keeps the entry.
      if (err instanceof SecretAccessError && !err.retryable) cache.delete(refKey(ref));
      throw err;
    }
    if (this.opts.cacheTtlMs > 0) {
      // Keyed by secret@version, and rotations pin new versions: what is past its TTL goes, or a
      // long-lived instance would hold every version (and cloud-init payload) it ever read.
      for (const [key, entry] of cache) if (now - entry.at >= this.opts.cacheTtlMs) cache.delete(key);
      cache.set(refKey(ref), { at: now, value });
    }
    return value;
  }
}
