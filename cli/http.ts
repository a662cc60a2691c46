// The CLI's HTTP client: JSON in and out, the role's bearer token, a timeout, and failures turned into
// ApiCallError (the API's stable code), UnreachableError, or BadResponseError (a 2xx body that is not a
// JSON object where the route answers one, or a redirect: never followed). One retry of a 503 or 429
// whose Retry-After (seconds or an HTTP date) asks for at most 5 s; an idempotent request (an acquire
// under its key) is also sent again after a lost answer; a 401 to a gcloud identity token is sent once
// more with a fresh one.

import { deadlineSignal } from '../shared/src/adapters/deadline-signal.js';
import { BEARER_TOKEN } from '../shared/src/domain/bearer-token.js';
import {
  LOST_ANSWER_RETRIES,
  LOST_ANSWER_STATUSES,
  LOST_ANSWER_WAIT_MS,
  retryAfterMs,
} from '../shared/src/domain/retry-after.js';
import { GCLOUD_SOURCE, type ResolvedToken, type Role, resolveToken, type TokenSources } from './config.js';
import { ApiCallError, BadResponseError, InputError, UnreachableError } from './errors.js';

// RFC 9110 field values may hold spaces, but a bearer token never does (RFC 6750 §2.1 b64token is visible
// ASCII). Checked before fetch: fetch's refusal of a bad header quotes the whole value, token included.

const MAX_RETRY_WAIT_MS = 5000;

/**
 * How long the CLI waits for an answer. The API's slowest answers stay under it — a job run's two Cloud
 * Scheduler calls (SCHEDULER_CALL_TIMEOUT_MS each), a lease write's wait for its turn on a busy proxy's
 * lock (30 s, then its calls and a grant's credentials read) — so that the CLI reads the API's verdict (`outcome_unknown`: do not simply
 * run again; `503 unavailable` with its Retry-After) rather than giving up as if nothing had been sent.
 */
export const CLI_REQUEST_TIMEOUT_MS = 60_000;

export interface ApiClientOptions {
  baseUrl: string;
  tokens: TokenSources;
  fetch?: typeof fetch;
  /** Each request's timeout (default CLI_REQUEST_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Whether the user named the URL (config.ts resolveToken): default true. */
  urlNamed?: boolean;
}

export interface CallOptions {
  role: Role;
  body?: unknown;
  query?: URLSearchParams;
  /** Request headers of the call's own (e.g. If-Match); never authorization, accept or content-type. */
  headers?: Record<string, string>;
  /**
   * The request is safe to send again when its answer is lost — a timeout, a reset, a 500/502/504 (Cloud
   * Run's front end, whose page is no answer of the service): an acquire under its Idempotency-Key, whose
   * retry gets the lease the lost answer carried rather than a second one (docs/leases.md § Idempotent
   * acquire). Sent again up to LOST_ANSWER_RETRIES times, a second apart.
   */
  idempotent?: boolean;
  /**
   * The route answers 204 with no body (a lease's release and report, a reclaim's delete): an empty 2xx
   * is its success, and the call resolves to undefined. Any other call's success is a JSON object.
   */
  noContent?: boolean;
  /**
   * Ends the call early (`fleet watch`'s Ctrl-C): the request in flight is aborted, and the call rejects
   * with fetch's AbortError — the caller's own doing, for it to handle, not an unreachable API.
   */
  signal?: AbortSignal;
}

export class ApiClient {
  private readonly resolved = new Map<Role, ResolvedToken>();
  private readonly fetch: typeof fetch;

  constructor(private readonly opts: ApiClientOptions) {
    this.fetch = opts.fetch ?? globalThis.fetch;
  }

  get baseUrl(): string {
    return this.opts.baseUrl;
  }

  tokenFor(role: Role): ResolvedToken {
    let t = this.resolved.get(role);
    if (!t) {
      t = resolveToken(role, this.opts.baseUrl, this.opts.tokens, this.opts.urlNamed ?? true);
      if (t.token !== null && !BEARER_TOKEN.test(t.token)) {
        const from = /^[A-Z_]+$/.test(t.source) ? `$${t.source}` : t.source;
        throw new InputError(
          `the token from ${from} is not a bearer token (RFC 6750: letters, digits, -._~+/ and trailing =; no spaces or line breaks)`,
        );
      }
      this.resolved.set(role, t);
    }
    return t;
  }

  /** The request's timeout, and the caller's signal when it passed one. */
  private requestSignal(own?: AbortSignal): AbortSignal {
    return deadlineSignal(this.opts.timeoutMs ?? CLI_REQUEST_TIMEOUT_MS, own);
  }

  async call<T = unknown>(
    method: string,
    path: string,
    { role, body, query, headers: own, idempotent = false, noContent = false, signal }: CallOptions,
  ): Promise<T> {
    const headers: Record<string, string> = { ...own, accept: 'application/json' };
    let { token, source } = this.tokenFor(role);
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const url = `${this.opts.baseUrl}${path}${query && query.size > 0 ? `?${query}` : ''}`;
    let retriedAfter503 = false;
    let freshToken = false;
    /** The one short wait on a 503/429 is spent (not the first attempt's alone: a fresh token's, too). */
    let waited = false;
    let lostAnswers = 0;
    const lostAgain = async () => {
      if (!idempotent || lostAnswers >= LOST_ANSWER_RETRIES) return false;
      lostAnswers++;
      await pause(LOST_ANSWER_WAIT_MS, signal);
      return true;
    };
    for (;;) {
      let res: Response;
      let text: string;
      try {
        res = await this.fetch(url, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: this.requestSignal(signal),
          // Never followed: fetch turns a redirected POST into a GET without its body (a listing answered,
          // printed "created", exit 0) and drops the token on another origin (an expired-credential hint).
          redirect: 'manual',
        });
        // The body is part of the answer: a timeout or reset after the headers is no answer either, not
        // a fault of the CLI's (it was reported `internal`).
        text = await res.text();
      } catch (err) {
        if (signal?.aborted) throw err;
        if (await lostAgain()) continue;
        throw new UnreachableError(this.opts.baseUrl, { cause: err });
      }
      if (res.status >= 300 && res.status < 400) throw redirected(res, url, path);
      // A gcloud identity token lives an hour (gcloud may hand out one with minutes left) and was kept for
      // the process: `fleet watch`, which runs for a day, sent an expired one every round and died with a
      // hint to log in again. A 401 changed nothing: the token is dropped, gcloud asked again, the request
      // sent once more. A token from the environment, a flag or state.json is what it is: its 401 is final.
      if (res.status === 401 && source === GCLOUD_SOURCE && !freshToken) {
        freshToken = true;
        this.resolved.delete(role);
        ({ token, source } = this.tokenFor(role));
        if (token) headers.authorization = `Bearer ${token}`;
        else delete headers.authorization;
        continue;
      }
      if (LOST_ANSWER_STATUSES.has(res.status) && (await lostAgain())) continue;
      let json: unknown = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        // The API answers JSON or nothing: text under a success status is something else at that URL (a
        // web server, a sign-in page), and nothing was done — never printed as the answer, exit 0.
        if (res.ok) {
          throw new BadResponseError(
            `the API answered HTTP ${res.status} with a body that is not JSON (is --api / PROXYPLANE_API_URL the API?)`,
          );
        }
        // One line (docs/cli.md: an error is one line), not a front end's HTML page cut mid-tag.
        const start = text.replace(/\s+/g, ' ').trim().slice(0, 120);
        json = {
          message: `HTTP ${res.status} with a body that is not JSON (is --api / PROXYPLANE_API_URL the API?${res.status === 401 || res.status === 403 ? ' A Cloud Run front end refusing the caller?' : ''}): ${start}`,
        };
      }
      if (res.ok) {
        if (noContent) return undefined as T;
        if (!isObject(json)) throw notAnObject(res.status, text, json, `${method} ${path}`);
        return json as T;
      }
      // Seconds or an HTTP date (RFC 9110), read as the typed client reads it. Waited for only when it is
      // short: a person is waiting at the prompt, and a longer outage is better said than sat through.
      // 429: the API's per-caller rate limit, which changed nothing: the same one retry.
      const wait = retryAfterMs(res.headers.get('retry-after'), Date.now());
      if (
        (res.status === 503 || res.status === 429) &&
        !waited &&
        wait !== undefined &&
        wait <= MAX_RETRY_WAIT_MS
      ) {
        // A 429 changed nothing; a 503 may follow a write that landed all the same.
        retriedAfter503 = res.status === 503;
        waited = true;
        await pause(wait, signal);
        continue;
      }
      const code = (json as { error?: unknown } | null)?.error;
      const stable = typeof code === 'string' ? code : `http_${res.status}`;
      throw new ApiCallError(res.status, stable, json, path, retriedAfter503, source);
    }
  }
}

/** Waits `ms`, or less once `signal` aborts: the next attempt's fetch then rejects at once. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A 2xx whose body is empty or JSON but no object, where the route answers one: not the API's answer (a
 * server or proxy in its stead), and nothing says it did what was asked. Taken as the answer, `proxies
 * create` printed "created" and exited 0, `apply` read a proxy as absent, `get` printed `null`.
 */
function notAnObject(status: number, text: string, json: unknown, call: string): BadResponseError {
  const got = text === '' ? 'no body' : `JSON that is no object (${kindOf(json)})`;
  return new BadResponseError(
    `the API answered HTTP ${status} with ${got} where ${call} answers an object (is --api / PROXYPLANE_API_URL the API?)`,
  );
}

const kindOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`);

/**
 * A redirect, not followed: where it points, and the --api to use instead — its location less the path
 * called (a location naming the whole request, as Cloud Run's http→https redirect does), else its origin.
 */
function redirected(res: Response, url: string, path: string): BadResponseError {
  const location = res.headers.get('location');
  let instead = '';
  try {
    if (location) {
      const to = new URL(location, url);
      const base = to.pathname.endsWith(path) ? to.pathname.slice(0, -path.length) : '';
      instead = `; use ${to.origin}${base.replace(/\/+$/, '')} as --api (PROXYPLANE_API_URL)`;
    }
  } catch {
    // A location that is no URL: named as it came, nothing suggested.
  }
  return new BadResponseError(
    `the API answered HTTP ${res.status}${location ? ` redirecting to ${location}` : ''}: not followed${instead}`,
  );
}
