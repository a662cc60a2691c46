// The admin commands behind the routes: read → compute → conditional write → publish. Writes of the spec
// compare against the version that was read (ProxyStore.replaceSpec), so two concurrent edits can never
// lose one another: the loser re-reads and recomputes, a bounded number of times, then answers 409.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import {
  PORT_RESERVED,
  RESERVED_PORT_MESSAGE,
  reservedManagedPort,
} from '../../../../shared/src/domain/cloud-init/proxy-port.js';
import {
  ENDPOINT_HOST_RULE,
  quotableHost,
  refusedEndpointHost,
} from '../../../../shared/src/domain/endpoint-host.js';
import {
  refusedHealthCheckUrl,
  unreachableExpectedStatus,
} from '../../../../shared/src/domain/health-check-url.js';
import { lacksBootSource } from '../../../../shared/src/domain/managed-boot.js';
import { type ManagedPortPolicy, refusedManagedPort } from '../../../../shared/src/domain/managed-ports.js';
import { unsupportedManagedProtocol } from '../../../../shared/src/domain/managed-protocol.js';
import {
  MANAGED_PROVIDERS,
  unsupportedManagedProvider,
} from '../../../../shared/src/domain/managed-provider.js';
import { emptyStatus, type ProxyResource, type ProxySpec } from '../../../../shared/src/domain/proxy.js';
import type { StoredIssue } from '../../../../shared/src/domain/stored-issues.js';
import type { ReconcileRequest } from '../../../../shared/src/messages/reconcile-request.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import {
  InvalidStoredProxy,
  type ProxyFilter,
  type ProxyStore,
} from '../../../../shared/src/ports/proxy-store.js';
import { mayStillBeSent } from '../../../../shared/src/ports/publish-error.js';
import type { ReconcilePublisher } from '../../../../shared/src/ports/reconcile-publisher.js';
import { ApiError, invalidRequest, notFound, portNotAllowed } from '../errors.js';
import { describeIfMatch, etagOf, type IfMatch, ifMatchHolds, proxyTag } from './if-match.js';
import { type SpecChange, sameSpec } from './spec-changes.js';

export interface ProxyAdminDeps {
  store: ProxyStore;
  publisher: ReconcilePublisher;
  clock: Clock;
  log: Logger;
  /** The ports a managed proxy may listen on (the proxy firewall's: MANAGED_PROXY_PORTS); null or absent: any. */
  managedProxyPorts?: ManagedPortPolicy;
  newUid?: () => string;
  /** Attempts of read → conditional write before answering 409 conflict. */
  maxWriteAttempts?: number;
  /** Waits before attempt `attempt` (2, 3, …) after a conflict; jittered so racing writers spread out. */
  backoff?: (attempt: number) => Promise<void>;
}

/** How much of a caller's If-Match a 412's message repeats. */
const MAX_ECHO = 200;

const jitteredBackoff = (attempt: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, Math.random() * 25 * attempt));

export type ProxyAdmin = ReturnType<typeof proxyAdmin>;

/**
 * What DELETE answers for a document that does not fit the model: no proxy can be shown, so its name, its
 * uid (its instance is `pp-<uid>`) when readable, the deletion time, and why it does not fit.
 */
export interface InvalidProxyDeletion {
  name: string;
  uid: string | null;
  deletionRequestedAt: Date;
  storedProxyInvalid: { issues: StoredIssue[] };
}

export function proxyAdmin({
  store,
  publisher,
  clock,
  log,
  managedProxyPorts = null,
  newUid = randomUUID,
  maxWriteAttempts = 5,
  backoff = jitteredBackoff,
}: ProxyAdminDeps) {
  // The write is durable before we publish; if the publish fails the request still succeeded, so we log
  // loudly instead of failing it (a client retry of POST would only meet 409). Repeating a PUT/PATCH or
  // DELETE publishes again, and POST /v1/proxies/{name}/reconcile always does. Answers whether the
  // request was surely not sent (`false`): the one caller with no write behind it fails on that.
  async function publish(proxy: string, reason: ReconcileRequest['reason']): Promise<boolean> {
    try {
      await publisher.publish({ proxy, reason });
      return true;
    } catch (err) {
      const kind = (err as { kind?: unknown; code?: unknown })?.kind ?? (err as { code?: unknown })?.code;
      const mayBeSent = mayStillBeSent(err);
      const what = mayBeSent ? 'not confirmed (it may still be sent)' : 'not published';
      log.error(`reconcile request ${what} for ${proxy} (${reason})`, {
        proxy,
        reason,
        errorKind: kind,
      });
      return mayBeSent;
    }
  }

  // Checked before anything is written or published: a refused spec changes nothing.
  // `prefix`: where the spec is in the body ('spec.' for POST, '' for PUT/PATCH of the spec itself).
  function assertSpecAllowed(next: ProxySpec, prefix: string, current?: ProxySpec): void {
    const refused = refusedManagedPort(next, managedProxyPorts, current);
    if (refused !== null && managedProxyPorts !== null)
      throw portNotAllowed(refused, managedProxyPorts, `${prefix}port`);
    // Whatever the firewall opens: the default cloud-init cannot put squid there, and reconcile would latch
    // the proxy Failed (a Ready one leaves leasing) — the renderer's own rule, checked before any write.
    const reserved = reservedManagedPort(next, current);
    if (reserved !== null) {
      const path = `${prefix}port`;
      const message = `${path} ${reserved}: ${RESERVED_PORT_MESSAGE}, so the default cloud-init cannot run the proxy there; use another port (3128 by default), or a ${prefix}cloudInit of your own`;
      throw invalidRequest(message, [{ path, code: PORT_RESERVED, message }]);
    }
    const host = refusedEndpointHost(next, current);
    if (host !== null) {
      const path = `${prefix}endpoint.host`;
      // Quoted without what could be a password: one put in the wrong field is not sent back (nor into a CI log).
      const quoted = JSON.stringify(quotableHost(host));
      const message = `${path} must be ${ENDPOINT_HOST_RULE}: ${quoted}`;
      throw invalidRequest(message, [{ path, code: 'invalid_host', message }]);
    }
    if (refusedHealthCheckUrl(next, current)) {
      const path = `${prefix}healthCheck.url`;
      // Not quoted back: the point is that the password goes nowhere, this answer (and a CI log) included.
      const message = `${path} must not carry credentials (user:password@): it is stored, listed to crawlers and sent through the proxy; the probe authenticates to the proxy with ${prefix}credentialsRef`;
      throw invalidRequest(message, [{ path, code: 'credentials_in_url', message }]);
    }
    const status = unreachableExpectedStatus(next, current);
    if (status !== null) {
      const path = `${prefix}healthCheck.expectedStatus`;
      const message = `${path} ${status} is an interim (1xx) answer, never the response a check reads: expect a final status, 200-599`;
      throw invalidRequest(message, [{ path, code: 'expected_status_unreachable', message }]);
    }
    const provider = unsupportedManagedProvider(next, current);
    if (provider !== null) {
      const path = `${prefix}provider`;
      const message = `${path} ${JSON.stringify(provider)} has no adapter in this plane: use ${MANAGED_PROVIDERS.map((p) => JSON.stringify(p)).join(' or ')} (or leave it out)`;
      throw invalidRequest(message, [{ path, code: 'provider_unsupported', message }]);
    }
    const protocol = unsupportedManagedProtocol(next);
    if (protocol !== null) {
      const path = `${prefix}protocol`;
      const message = `${path} ${JSON.stringify(protocol)} is not served by a managed proxy (its VM runs an HTTP proxy): use "http", or an external proxy for ${protocol}`;
      throw invalidRequest(message, [{ path, code: 'protocol_unsupported', message }]);
    }
    if (lacksBootSource(next, current)) {
      const path = `${prefix}credentialsRef`;
      const message = `${path} is required for a managed proxy without ${prefix}cloudInit: the default cloud-init installs the proxy with those credentials`;
      throw invalidRequest(message, [{ path, code: 'credentials_required', message }]);
    }
  }

  // If-Match is checked against the same read the write is preconditioned on: a write between this check
  // and the write makes the write a conflict, and the next attempt checks the new generation.
  function assertIfMatch(current: ProxyResource, ifMatch: IfMatch | undefined): void {
    if (ifMatch === undefined || ifMatchHolds(ifMatch, proxyTag(current))) return;
    const weak =
      ifMatch.kind === 'tags' && ifMatch.tags.some((t) => t.weak) ? ' (a weak tag W/"…" never matches)' : '';
    const named = describeIfMatch(ifMatch);
    // Echoed input is clipped (docs/api.md § Errors): a header of thousands of tags is not sent back whole.
    const not = named.length > MAX_ECHO ? `${named.slice(0, MAX_ECHO)}…` : named;
    throw new ApiError(
      412,
      'precondition_failed',
      `proxy "${current.name}" is at ${etagOf(proxyTag(current))} (generation ${current.generation}), not ${not}${weak}`,
      { generation: current.generation, etag: etagOf(proxyTag(current)) },
    );
  }

  /**
   * DELETE of a document that does not fit the model. Its deletion is requested as for any proxy — only
   * deletionRequestedAt is written, at the version read, nothing else of it trusted — and reconcile, which
   * cannot reconcile such a document, removes it (never the instance: its uid may be the broken field, and
   * a providerId read from a broken document may name another proxy's VM). The instance is then labelled
   * with a uid no document holds, and the orphan GC deletes it at its next sweep past MinAge
   * (docs/gc-and-rotation.md). If-Match compares against the generation when it is still readable.
   */
  async function requestDeletionOfInvalid(
    err: InvalidStoredProxy,
    ifMatch: IfMatch | undefined,
  ): Promise<InvalidProxyDeletion | 'conflict'> {
    const { name, uid, generation, version, issues } = err.stored;
    const tag = generation !== null && uid !== null ? proxyTag({ generation, uid }) : null;
    if (ifMatch !== undefined && !(tag !== null ? ifMatchHolds(ifMatch, tag) : ifMatch.kind === 'any')) {
      throw new ApiError(
        412,
        'precondition_failed',
        tag !== null
          ? `proxy "${name}" is at ${etagOf(tag)}, not ${describeIfMatch(ifMatch).slice(0, MAX_ECHO)}`
          : `proxy "${name}" has no readable generation and uid: only If-Match: * holds`,
        tag !== null ? { generation: generation!, etag: etagOf(tag) } : {},
      );
    }
    const at = err.stored.deletionRequestedAt ?? clock.now();
    if (!err.stored.deletionRequestedAt) {
      const outcome = await store.requestDeletion(name, at, ifMatch === undefined ? undefined : version);
      if (outcome === 'gone') throw notFound(name);
      if (outcome === 'conflict') return 'conflict';
    }
    log.warn(`deletion requested of proxy ${name}, whose stored document does not fit the model`, {
      event: 'api.invalid_proxy_deletion',
      proxy: name,
      uid,
      fields: issues.map((i) => i.path),
    });
    await publish(name, 'delete-requested');
    return { name, uid, deletionRequestedAt: at, storedProxyInvalid: { issues } };
  }

  async function get(name: string): Promise<ProxyResource> {
    const stored = await store.get(name);
    if (!stored) throw notFound(name);
    return stored.proxy;
  }

  return {
    get,

    /** The proxies, and the documents the query matched that do not fit the model (skipped, named). */
    list: (filter: ProxyFilter) => store.listAll(filter),

    /** One page of list(), in name order, after `after` (GET /v1/proxies?pageSize=…). */
    page: (filter: ProxyFilter, page: { after: string | null; size: number }) => store.listPage(filter, page),

    async create(name: string, spec: ProxySpec): Promise<ProxyResource> {
      assertSpecAllowed(spec, 'spec.');
      const proxy: ProxyResource = {
        name,
        uid: newUid(),
        generation: 1,
        createdAt: clock.now(),
        deletionRequestedAt: null,
        spec,
        status: emptyStatus(),
      };
      await store.create(proxy); // StoreError already_exists → 409 in recover()
      await publish(name, 'created');
      return proxy;
    },

    /**
     * Applies `change` to the current spec. A result equal to it writes nothing and keeps the generation.
     * With `ifMatch`, only to a proxy at one of its generations (412 otherwise, nothing written): checked
     * after 404 and 409 deletion_requested (RFC 9110 §13.2.1: an answer the request would get without the
     * precondition wins), before the change is computed and checked against the stored spec.
     */
    async updateSpec(name: string, change: SpecChange, ifMatch?: IfMatch): Promise<ProxyResource> {
      for (let attempt = 1; attempt <= maxWriteAttempts; attempt++) {
        if (attempt > 1) await backoff(attempt);
        const stored = await store.get(name);
        if (!stored) throw notFound(name);
        const current = stored.proxy;
        if (current.deletionRequestedAt) {
          throw new ApiError(
            409,
            'deletion_requested',
            `proxy "${name}" is being deleted; its spec is frozen`,
          );
        }
        assertIfMatch(current, ifMatch);
        const next = change(current.spec);
        assertSpecAllowed(next, '', current.spec);
        if (sameSpec(next, current.spec)) {
          // Nothing to write. But if reconcile has not yet seen this generation (say its request was
          // lost), repeating the request is how a client recovers, so it publishes again.
          if (current.status.observedGeneration < current.generation) await publish(name, 'spec-changed');
          return current;
        }
        const outcome = await store.replaceSpec(name, next, stored.version);
        if (outcome === 'gone') throw notFound(name);
        if (outcome === 'written') {
          await publish(name, 'spec-changed');
          return { ...current, spec: next, generation: current.generation + 1 };
        }
      }
      throw new ApiError(409, 'conflict', `proxy "${name}" kept changing concurrently; retry`);
    },

    /**
     * Idempotent: a second DELETE keeps the first timestamp and publishes again (a nudge, harmless). With
     * `ifMatch`, only of a proxy at one of its generations (412 otherwise, nothing written), the deletion
     * being written at the version read.
     */
    async requestDeletion(name: string, ifMatch?: IfMatch): Promise<ProxyResource | InvalidProxyDeletion> {
      for (let attempt = 1; attempt <= maxWriteAttempts; attempt++) {
        let stored: Awaited<ReturnType<ProxyStore['get']>>;
        try {
          stored = await store.get(name);
        } catch (err) {
          if (!(err instanceof InvalidStoredProxy)) throw err;
          const outcome = await requestDeletionOfInvalid(err, ifMatch);
          if (outcome === 'conflict') continue;
          return outcome;
        }
        if (!stored) throw notFound(name);
        const current = stored.proxy;
        assertIfMatch(current, ifMatch);
        const at = current.deletionRequestedAt ?? clock.now();
        if (!current.deletionRequestedAt) {
          const expected = ifMatch === undefined ? undefined : stored.version;
          const outcome = await store.requestDeletion(name, at, expected);
          if (outcome === 'gone') throw notFound(name);
          if (outcome === 'conflict') continue;
        }
        await publish(name, 'delete-requested');
        // Re-read for the timestamp that was stored (a concurrent DELETE may have been first); the
        // document may already be gone if reconcile was quick — and a proxy created under the name since
        // is another one: its body and ETag would answer this deletion (an If-Match on that tag then
        // deletes the new proxy).
        const after = (await store.get(name))?.proxy;
        return after?.uid === current.uid ? after : { ...current, deletionRequestedAt: at };
      }
      throw new ApiError(409, 'conflict', `proxy "${name}" kept changing concurrently; retry`);
    },

    async requestReconcile(name: string): Promise<void> {
      await get(name);
      // Nothing is written, so nothing re-derives a request Pub/Sub refused (a Failed proxy's latch is
      // passed by this request alone): the caller hears it and retries. One not confirmed in time may
      // still go out, as a write's does: 202.
      if (!(await publish(name, 'manual')))
        throw new ApiError(503, 'unavailable', 'Pub/Sub did not take the reconcile request; retry', {
          retryAfterSeconds: 5,
        });
    },
  };
}
