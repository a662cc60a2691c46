// The typed client crawlers use for discovery and leases. Request and response types come from the same
// zod schemas the service validates with and publishes as /openapi.json; responses are checked against
// them, so a version skew fails loudly here instead of deep inside a crawler.
import type { z } from 'zod';
import { BEARER_TOKEN } from '../domain/bearer-token.js';
import { isLeaseId, type LeaseResult } from '../domain/leases/model.js';
import {
  type AcquireRequest,
  LeaseGrant,
  ListedProxies,
  type ListedProxy,
  MAX_LIST_PAGE_SIZE,
  NoMatch,
  RenewResponse,
  refusesPaging,
} from '../domain/leases/wire.js';
import type { ProxyProtocol } from '../domain/proxy.js';
import {
  LOST_ANSWER_RETRIES,
  LOST_ANSWER_STATUSES,
  LOST_ANSWER_WAIT_MS,
  retryAfterMs,
} from '../domain/retry-after.js';

export type { LeaseResult } from '../domain/leases/model.js';
export type {
  LeaseGrant,
  ListedProxies,
  ListedProxy,
  NoMatch,
  RenewResponse,
} from '../domain/leases/wire.js';
export type AcquireOptions = z.input<typeof AcquireRequest>;

export interface ProxyFilter {
  attributes?: Record<string, string>;
  healthy?: boolean;
  /** Healthy, not cordoned and not held by the gateway: what a lease could go to (capacity and cooldowns aside). */
  leasable?: boolean;
  /** Only proxies speaking it (what a lease with that protocol in `protocols` would consider). */
  protocol?: ProxyProtocol;
}

/**
 * How long a request waits for its answer by default: past the service's slowest honest one — a write's
 * wait for its turn on a busy proxy's lock (30 s), the calls it makes then and a grant's read of the
 * credentials (5 s) — so that a crawler gets the
 * 503 and its Retry-After rather than giving up at the same moment and sending the request again behind
 * its own first copy, which still holds its place in that queue.
 */
export const DEFAULT_TIMEOUT_MS = 60_000;

export interface LeaseClientOptions {
  /** The service's base URL, e.g. https://proxyplane-api-xyz.a.run.app */
  baseUrl: string;
  /** A crawler token (DISCOVERY_TOKENS); omit only against a local plane with auth off. */
  token?: string;
  /** Per-request timeout (default DEFAULT_TIMEOUT_MS, 60 s). */
  timeoutMs?: number;
  /**
   * Retries of a 503 (store busy or restarting) or a 429 (rate limited), honouring Retry-After up to 5 s
   * (default 2) — a 429 that asks for longer is given up at once (LeaseApiError.retryAfterSeconds says
   * when); an acquire's, a renewal's, a release's and a report's also of a lost answer (timeout, reset,
   * 500/502/504), 1 s apart, an acquire under its Idempotency-Key.
   */
  retries?: number;
  fetch?: typeof fetch;
}

/** A non-2xx answer: `code` is the service's stable error code. */
export class LeaseApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly body: unknown,
    /** The answer's Retry-After, in seconds, when it had one (a 429 or a 503: when to ask again). */
    readonly retryAfterSeconds?: number,
  ) {
    super(`lease API: HTTP ${status} ${code}`);
    this.name = 'LeaseApiError';
  }
}

/**
 * 409 from acquire: nothing can be leased now; the counts say why. When proxies were left out only for
 * their cooldowns, `counts.cooldownEndsAt` and `retryAfterSeconds` say when the first is leasable again.
 */
export class NoMatchError extends LeaseApiError {
  constructor(
    readonly counts: NoMatch,
    retryAfterSeconds?: number,
  ) {
    super(409, 'no_match', counts, retryAfterSeconds);
    this.name = 'NoMatchError';
  }
}

/** The API's base URL without trailing slashes. A missing one (`process.env.X!` of a variable the shell
 *  does not set) failed as `Cannot read properties of undefined (reading 'replace')`, and one without a
 *  scheme only at the first call, as fetch's `Failed to parse URL`: both are refused here, unquoted (a URL
 *  may carry a password). */
function baseUrlOf(baseUrl: unknown): string {
  const url = typeof baseUrl === 'string' && URL.canParse(baseUrl) ? new URL(baseUrl) : null;
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new TypeError(
      `LeaseClient: baseUrl must be the API's http(s) URL (locally $PROXYPLANE_API_URL, which npm start prints), not ${
        typeof baseUrl === 'string' ? (baseUrl === '' ? 'an empty string' : 'that string') : String(baseUrl)
      }`,
    );
  }
  return (baseUrl as string).replace(/\/+$/, '');
}

/** The longest delay a Node timer keeps (a longer one fires after 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;
const MAX_RETRIES = 100;
const isIntegerIn = (n: unknown, min: number, max: number) =>
  typeof n === 'number' && Number.isInteger(n) && n >= min && n <= max;

export class LeaseClient {
  private readonly base: string;
  private readonly fetch: typeof fetch;

  private readonly token: string | undefined;

  constructor(private readonly opts: LeaseClientOptions) {
    // A token read from a file keeps its trailing newline (fetch would trim it too); an empty one is none.
    // A token the API could never take is refused here, without quoting it: fetch would refuse some (a
    // line break) with a TypeError quoting the whole header, into the crawler's logs.
    const token = opts.token?.trim() || undefined;
    if (token !== undefined && !BEARER_TOKEN.test(token)) {
      throw new TypeError(
        'LeaseClient: the token is not a bearer token (RFC 6750: letters, digits, -._~+/ and trailing =)',
      );
    }
    this.token = token;
    this.base = baseUrlOf(opts.baseUrl);
    // Refused here, not at the first call: 0 aborted every request at once; past 2^31-1 ms Node fires the
    // timer after 1 ms; NaN (Number() of an unset variable), a negative or Infinity threw from
    // AbortSignal.timeout on every call — read as a lost answer and retried. A retries of NaN never
    // stopped retrying.
    if (opts.timeoutMs !== undefined && !isIntegerIn(opts.timeoutMs, 1, MAX_TIMER_MS)) {
      throw new TypeError(
        `LeaseClient: timeoutMs must be a whole number of milliseconds, 1 to ${MAX_TIMER_MS}`,
      );
    }
    if (opts.retries !== undefined && !isIntegerIn(opts.retries, 0, MAX_RETRIES)) {
      throw new TypeError(`LeaseClient: retries must be a whole number, 0 to ${MAX_RETRIES}`);
    }
    this.fetch = opts.fetch ?? globalThis.fetch;
  }

  /**
   * Every proxy matching `filter`, in name order: the listing's pages followed to the last, `pageSize` (at
   * most 1,000) a request, returned as one listing (`count`: all of them). Not a snapshot: a proxy created
   * or deleted meanwhile may or may not be in it. A service older than paging is asked once, unpaged.
   */
  async listProxies(filter: ProxyFilter = {}, options: { pageSize?: number } = {}): Promise<ListedProxies> {
    const proxies: ListedProxy[] = [];
    for await (const page of this.proxyPages(filter, options)) proxies.push(...page.proxies);
    return { proxies, count: proxies.length };
  }

  /**
   * The listing a page at a time, for a fleet too large to hold at once. A page may hold fewer than
   * `pageSize` proxies, even none, when `healthy`, `leasable` or `protocol` left some out.
   */
  async *proxyPages(
    filter: ProxyFilter = {},
    { pageSize = LIST_PAGE_SIZE }: { pageSize?: number } = {},
  ): AsyncGenerator<ListedProxies> {
    let pageToken: string | undefined;
    for (;;) {
      let page: ListedProxies;
      try {
        page = await this.listProxiesPage(filter, { pageSize, pageToken });
      } catch (err) {
        if (pageToken !== undefined || !pagingUnknown(err)) throw err;
        yield ListedProxies.parse(await this.send('GET', `/v1/proxies${queryOf(filter)}`));
        return;
      }
      yield page;
      const next = page.nextPageToken ?? null;
      if (next === null) return;
      // The token advances with every page (it names the last proxy read): one that does not is a
      // service bug, and following it would never end.
      if (next === pageToken) throw new LeaseApiError(200, 'bad_response', page);
      pageToken = next;
    }
  }

  /** One page of the listing: `nextPageToken` asks for the next (null on the last). */
  async listProxiesPage(
    filter: ProxyFilter = {},
    page: { pageSize?: number; pageToken?: string } = {},
  ): Promise<ListedProxies> {
    const paging = new URLSearchParams();
    if (page.pageSize !== undefined) paging.append('pageSize', String(page.pageSize));
    if (page.pageToken !== undefined) paging.append('pageToken', page.pageToken);
    return ListedProxies.parse(await this.send('GET', `/v1/proxies${queryOf(filter, paging)}`));
  }

  /**
   * Throws NoMatchError when no proxy can be leased now. A grant this client cannot read (a version skew,
   * a body cut short) still holds a slot of a proxy until its TTL: it is released first, best effort, when
   * its lease id can be read, and the error that made it unusable is thrown.
   *
   * Each call sends a new random Idempotency-Key, and the same one on its retries: of a 503, and of an
   * answer that was lost — a timeout, a connection reset, a 500/502/504 (Cloud Run's front end, whose
   * own page is no answer of the service). Such an acquire may well have been granted: its retry under
   * the key gets that lease, not a second one (docs/leases.md § Idempotent acquire). A caller retrying
   * the thrown error itself (a 429 whose Retry-After it scheduled by, a 503 past the retries) passes
   * `idempotencyKey` — its own, e.g. crypto.randomUUID(), the same for every try of one acquire — or it
   * sends a new key and may lease twice: the first try's grant may have committed unseen. After an
   * unreadable grant (released here) or `idempotency_key_spent`, a new key: that one is spent.
   */
  async acquire(
    request: AcquireOptions = {},
    { idempotencyKey }: { idempotencyKey?: string } = {},
  ): Promise<LeaseGrant> {
    let body: unknown;
    try {
      const key = idempotencyKey ?? globalThis.crypto.randomUUID();
      body = await this.send('POST', '/v1/leases', request, { 'idempotency-key': key }, true);
    } catch (err) {
      if (err instanceof LeaseApiError && err.code === 'bad_response') {
        await this.releaseUnusable(leaseIdIn(err.body));
      }
      throw err;
    }
    const grant = LeaseGrant.safeParse(body);
    if (grant.success) return grant.data;
    await this.releaseUnusable(leaseIdIn(body));
    throw grant.error;
  }

  private async releaseUnusable(leaseId: string | null): Promise<void> {
    if (leaseId === null) return;
    // Best effort: the error the caller gets is the unusable grant, not this; the TTL ends the lease anyway.
    await this.release(leaseId).catch(() => {});
  }

  /**
   * Sent again when its answer was lost: a renewal sets the expiry to now + TTL and never shortens it, so
   * one landed twice extends once (to the later now) — and the renewal is the call whose failure near
   * the expiry costs the crawler its lease.
   */
  async renew(leaseId: string, ttlSeconds?: number): Promise<RenewResponse> {
    const body = ttlSeconds === undefined ? {} : { ttlSeconds };
    return RenewResponse.parse(
      await this.send('POST', `/v1/leases/${encodeURIComponent(leaseId)}/renew`, body, {}, true),
    );
  }

  /** Idempotent (the service answers 204 whatever the lease's state), so sent again when its answer was lost. */
  async release(leaseId: string): Promise<void> {
    await this.send('DELETE', `/v1/leases/${encodeURIComponent(leaseId)}`, undefined, {}, true);
  }

  /**
   * rate_limited and banned keep this proxy away from `target` (default: the lease's) for a while. Sent
   * again when its answer was lost: a report that landed twice only starts its cooldown a moment later.
   */
  async report(leaseId: string, result: LeaseResult, target?: string): Promise<void> {
    const body = target === undefined ? { result } : { result, target };
    await this.send('POST', `/v1/leases/${encodeURIComponent(leaseId)}/report`, body, {}, true);
  }

  /**
   * Acquires, runs `use`, and releases whatever happens. A release that fails (after its retries) is not
   * thrown: it would replace `use`'s result, or its error, with the release's — a crawl done and lost for
   * a lease whose TTL ends it anyway.
   */
  async withLease<T>(request: AcquireOptions, use: (lease: LeaseGrant) => Promise<T>): Promise<T> {
    const lease = await this.acquire(request);
    try {
      return await use(lease);
    } finally {
      await this.release(lease.leaseId).catch(() => {});
    }
  }

  /**
   * `own`: headers of the call's own, sent alike on every retry. `repeatable`: the call may be sent again
   * when its answer was lost (it carries an Idempotency-Key, or doing it twice is doing it once); any call
   * is retried on a 503.
   */
  private async send(
    method: string,
    path: string,
    body?: unknown,
    own: Record<string, string> = {},
    repeatable = false,
  ): Promise<unknown> {
    const headers: Record<string, string> = { ...own, accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const retries = this.opts.retries ?? LOST_ANSWER_RETRIES;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      let text: string;
      try {
        res = await this.fetch(`${this.base}${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS),
        });
        text = await res.text();
      } catch (err) {
        // No answer (a timeout, a reset, the body cut off): the request may have been served all the same.
        if (!repeatable || attempt >= retries) throw err;
        await new Promise((r) => setTimeout(r, LOST_ANSWER_WAIT_MS));
        continue;
      }
      const json = parseBody(text);
      if (res.ok) {
        if (json === NOT_JSON) throw new LeaseApiError(res.status, 'bad_response', withoutUserinfo(text));
        return json;
      }
      if (repeatable && LOST_ANSWER_STATUSES.has(res.status) && attempt < retries) {
        await new Promise((r) => setTimeout(r, LOST_ANSWER_WAIT_MS));
        continue;
      }
      const asked = retryAfterMs(res.headers.get('retry-after'), Date.now());
      // 429: the API's per-caller rate limit; the refused request changed nothing, so it is sent again —
      // but not before Retry-After: until then this caller's bucket holds no token, and an earlier request
      // is refused again, spending a retry. A longer wait than the client's is the caller's to schedule.
      const early = res.status === 429 && asked !== undefined && asked > MAX_RETRY_WAIT_MS;
      if ((res.status === 503 || res.status === 429) && attempt < retries && !early) {
        // Absent or unreadable: 1 s. A 503's at most 5 s, whatever it asks.
        await new Promise((r) => setTimeout(r, Math.min(MAX_RETRY_WAIT_MS, asked ?? 1000)));
        continue;
      }
      const retryAfterSeconds = asked === undefined ? undefined : Math.ceil(asked / 1000);
      if (res.status === 409 && path === '/v1/leases') {
        const parsed = NoMatch.safeParse(json);
        if (parsed.success) throw new NoMatchError(parsed.data, retryAfterSeconds);
      }
      // Not every error comes from the service: Cloud Run's front end answers 502/503/429 in HTML.
      if (json === NOT_JSON) throw new LeaseApiError(res.status, 'http_error', text, retryAfterSeconds);
      const code = (json as { error?: unknown } | null)?.error;
      throw new LeaseApiError(
        res.status,
        typeof code === 'string' ? code : 'http_error',
        json,
        retryAfterSeconds,
      );
    }
  }
}

/** The page size listProxies asks for: ~1 MB of JSON a page (a crawler's listing has no cloud-init). */
const LIST_PAGE_SIZE = MAX_LIST_PAGE_SIZE;

/** The listing's query string: the filter, then any paging parameters. */
function queryOf(filter: ProxyFilter, paging: URLSearchParams = new URLSearchParams()): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filter.attributes ?? {})) q.append(`attr.${k}`, v);
  if (filter.healthy !== undefined) q.append('healthy', String(filter.healthy));
  if (filter.leasable !== undefined) q.append('leasable', String(filter.leasable));
  if (filter.protocol !== undefined) q.append('protocol', filter.protocol);
  for (const [k, v] of paging) q.append(k, v);
  return q.size > 0 ? `?${q}` : '';
}

/** A service older than paging: it refuses pageSize as a query parameter it does not read. */
function pagingUnknown(err: unknown): boolean {
  if (!(err instanceof LeaseApiError) || err.status !== 400 || err.code !== 'invalid_request') return false;
  return refusesPaging(err.body);
}

const NOT_JSON = Symbol('not JSON');
/** The longest Retry-After a call waits out before sending again (the CLI's too). */
const MAX_RETRY_WAIT_MS = 5000;

/** In a body that is not JSON (cut short, say), the service's own spelling of the field. */
const RAW_LEASE_ID = /"leaseId"\s*:\s*"([A-Za-z0-9_-]{1,128})"/;

/** The lease id of a grant that did not pass its schema: from the parsed body, else from its raw text. */
function leaseIdIn(body: unknown): string | null {
  const id =
    typeof body === 'string'
      ? RAW_LEASE_ID.exec(body)?.[1]
      : (body as { leaseId?: unknown } | null | undefined)?.leaseId;
  return typeof id === 'string' && isLeaseId(id) ? id : null;
}

/**
 * A URL's userinfo, up to its '@' or the end of a body cut short inside it: a grant's proxy URL carries
 * the proxy's credentials, and the error's body is what a crawler's logger prints. The service
 * percent-encodes userinfo, so no '"', '/', '?', '#' or '@' of its own ends it early.
 */
const USERINFO = /:\/\/[^/?#"\s@]*(@|$)/g;

function withoutUserinfo(text: string): string {
  return text.replace(USERINFO, (_, end: string) => `://[redacted]${end}`);
}

function parseBody(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}
