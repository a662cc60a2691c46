// The worker endpoints' part of the API's environment (read by the API's config only):
//   WORKER_TOKENS            "workerId:token,…" — each token authorises exactly its worker id (local plane, tests)
//   GATEWAY_SERVICE_ACCOUNT  "email" or "email=<glob>", comma-separated — Google identity tokens of these service
//                            accounts authorise any worker id (or those matching the glob, e.g. gw-eu-*)
//   WORKER_AUDIENCES         accepted `aud` of those tokens (default: ADMIN_AUDIENCES, the service URL)
//   local mode (PROXYPLANE_LOCAL=1 or FIRESTORE_EMULATOR_HOST set, as for admin auth): with none of the
//                            above, every caller may act as any worker (announced loudly)
// plus the contract's timing (shared/src/domain/workers/settings.ts).

import { loadWorkerSettings, type WorkerSettings } from '../../../../shared/src/domain/workers/settings.js';
import { WorkerId } from '../../../../shared/src/messages/gateway-snapshot.js';
import { AuthConfigError } from '../auth/authenticator.js';
import { parseTokenList } from '../auth/static-tokens.js';

/**
 * How long a worker call waits for Pub/Sub to confirm its snapshot-pass request (registration, an ACK
 * that opens or resumes proxies). The request is best effort — a failed one is logged and the snapshot
 * tick runs the pass anyway — so it must never cost the worker its answer: the gateway gives up on a whole
 * control call at GATEWAY_CONTROL_TIMEOUT_MS (10 s), and with the API's 10 s publish deadline
 * (API_PUBLISH_DEADLINE_MS) a Pub/Sub that took publishes without confirming them made every
 * registration a "no answer", and every retry (resumed) asked and waited again: a gateway started in
 * the stall never got a session.
 */
export const WORKER_PUBLISH_DEADLINE_MS = 2_000;

/**
 * How long registration waits for Pub/Sub's admin API to make (or, when it exists, read) the worker's
 * subscription — both calls together. Unlike the pass request this one is needed: past it the worker is
 * answered 503 unavailable + Retry-After and registers again, instead of the client library's own bound
 * (60 s a call, UNAVAILABLE retried up to 10 minutes) outliving the gateway's 10 s. Each admin call is sent
 * with it as its own deadline, unretried, so a call given up does not run on.
 *
 * With Pub/Sub alone stalling, registration answers within this (3 s) + the pass request (2 s) = 5 s plus
 * the Firestore round trips. These are per-call bounds; the whole call is held within
 * WORKER_REQUEST_BUDGET_MS (below), which cuts each to what is left.
 */
export const WORKER_SUBSCRIPTION_DEADLINE_MS = 3_000;

/**
 * The most one worker call (every route under /v1/workers) may spend on its store and Pub/Sub calls. The
 * bounds above and WORKER_STORE_CALL_DEADLINE_MS are per call, and a call makes several in a row —
 * registration: the subscription ensure (3 s), the worker read and write and the ownership epoch (3 s each;
 * the pass request, 2 s, is made alongside the epoch read) — so a Firestore slow on every call, each just
 * inside its bound, took it past the gateway's 10 s (GATEWAY_CONTROL_TIMEOUT_MS), which gave up, retried
 * and met the same. Inside this budget each call is bounded by min(its own bound, what is left), and one
 * with less than 50 ms left (BUDGET_FLOOR_MS, deadline.ts) is not made: 503 unavailable + Retry-After
 * (routes.ts). 8 s leaves the answer 2 s to reach the gateway — at the gateway's default
 * GATEWAY_CONTROL_TIMEOUT_MS of 10 s: it is configurable (docs/gateway.md), and a gateway set below about
 * 8 s gives up on a call slowed this way before its 503 arrives, and retries.
 */
export const WORKER_REQUEST_BUDGET_MS = 8_000;

export interface WorkerToken {
  workerId: string;
  token: string;
}

export interface ServiceAccountGrant {
  email: string;
  /** A glob over worker ids ("*" = any). */
  pattern: string;
}

export interface WorkersApiConfig {
  settings: WorkerSettings;
  tokens: WorkerToken[];
  serviceAccounts: ServiceAccountGrant[];
  audiences: string[];
  /** No worker identity configured, in explicit local mode: any caller may act as any worker. */
  open: boolean;
  /** What made this local mode ("PROXYPLANE_LOCAL=1", "FIRESTORE_EMULATOR_HOST set"), or null. */
  localMode: string | null;
}

const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

export function parseWorkerTokens(value: string | undefined): WorkerToken[] {
  const tokens = parseTokenList('WORKER_TOKENS', value, {
    ok: (id) => WorkerId.safeParse(id).success,
    shape: 'workerId:token with a valid worker id',
  }).map(({ name, token }) => ({ workerId: name, token }));
  if (new Set(tokens.map((t) => t.token)).size !== tokens.length) {
    throw new AuthConfigError('WORKER_TOKENS: a token may authorise one worker only');
  }
  return tokens;
}

export function parseServiceAccounts(value: string | undefined): ServiceAccountGrant[] {
  return list(value).map((entry) => {
    const [email = '', pattern = '*'] = entry.split('=', 2);
    if (!/^[^@\s]+@[^@\s]+$/.test(email)) {
      throw new AuthConfigError(`GATEWAY_SERVICE_ACCOUNT: "${email}" is not an email address`);
    }
    if (!/^[-_.a-zA-Z0-9*]{1,128}$/.test(pattern)) {
      throw new AuthConfigError(`GATEWAY_SERVICE_ACCOUNT: "${pattern}" is not a worker id glob`);
    }
    return { email: email.toLowerCase(), pattern };
  });
}

export function loadWorkersApiConfig(env: Record<string, string | undefined>): WorkersApiConfig {
  const tokens = parseWorkerTokens(env.WORKER_TOKENS);
  const serviceAccounts = parseServiceAccounts(env.GATEWAY_SERVICE_ACCOUNT);
  const audiences = list(env.WORKER_AUDIENCES ?? env.ADMIN_AUDIENCES);
  if (serviceAccounts.length > 0 && audiences.length === 0) {
    throw new AuthConfigError(
      'GATEWAY_SERVICE_ACCOUNT is set but WORKER_AUDIENCES / ADMIN_AUDIENCES is empty',
    );
  }
  let settings: WorkerSettings;
  try {
    settings = loadWorkerSettings(env);
  } catch (cause) {
    throw new AuthConfigError(`worker settings: ${(cause as Error).message}`, { cause });
  }
  const localMode =
    [
      env.PROXYPLANE_LOCAL === '1' ? 'PROXYPLANE_LOCAL=1' : null,
      env.FIRESTORE_EMULATOR_HOST !== undefined ? 'FIRESTORE_EMULATOR_HOST set' : null,
    ]
      .filter((m) => m !== null)
      .join(' and ') || null;
  return {
    settings,
    tokens,
    serviceAccounts,
    audiences,
    open: tokens.length === 0 && serviceAccounts.length === 0 && localMode !== null,
    localMode,
  };
}

/** The start-up warning of an open worker API (loud on purpose, like the admin API's), naming what made
 *  it local mode; null when worker auth is on. */
export function workerAuthOffWarning(config: Pick<WorkersApiConfig, 'open' | 'localMode'>): string | null {
  if (!config.open) return null;
  return `!!! WORKER AUTH IS OFF (${config.localMode ?? 'local mode'} and no WORKER_TOKENS / GATEWAY_SERVICE_ACCOUNT): any caller may act as any gateway worker. Local use only. !!!`;
}

/** "*" matches any run of characters; everything else literally. */
export function globMatches(pattern: string, id: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((s) => s.replace(/[.+?^${}()|[\]\\-]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(id);
}
