// One line per stable error code that tells a person what to do next (docs/api.md "Errors",
// docs/operations-jobs.md "Errors", the lease routes). The code itself is always printed too.
import { GCLOUD_UNNAMED, GCLOUD_WITHHELD } from './config.js';
import {
  ApiCallError,
  BadResponseError,
  InputError,
  PartialError,
  routeMissing,
  StaleFileError,
  UnreachableError,
  UsageError,
} from './errors.js';

type Hint = (
  body: Record<string, unknown>,
  status: number,
  path: string,
  retried: boolean,
  tokenSource: string,
) => string;

const auth =
  'set PROXYPLANE_TOKEN (or PROXYPLANE_ADMIN_TOKEN / PROXYPLANE_CRAWLER_TOKEN), or run `gcloud auth login`';

/**
 * A refused credential, said with where it came from (config.ts resolveToken): "set PROXYPLANE_TOKEN, or
 * run gcloud auth login" sent someone whose `$PROXYPLANE_TOKEN` held an expired gcloud token to log in
 * again, which changed nothing — the variable is sent first.
 */
function refused(source: string): string {
  if (source === 'none') return `no valid credential: ${auth}`;
  if (source === GCLOUD_UNNAMED)
    return "no credential sent: no local plane of yours runs here, and the gcloud identity token goes to this machine only at a URL you name (a port on a shared machine may be anyone's): start the plane (npm start), pass --api or PROXYPLANE_API_URL, or set PROXYPLANE_TOKEN";
  if (source === GCLOUD_WITHHELD)
    return 'no credential sent: the gcloud identity token goes only to an https:// API URL or one on this machine (plain http would carry it in the clear): use the https URL, or set PROXYPLANE_TOKEN';
  if (/^[A-Z_]+$/.test(source))
    return `the token in $${source} was refused (expired, or not one this API knows): replace it, or unset it to fall back to the next source (${auth})`;
  if (source.startsWith('gcloud'))
    return 'the gcloud identity token was refused (expired, or for another audience: the API takes ID tokens only where admin_emails is set): `gcloud auth login` again, or set PROXYPLANE_TOKEN';
  return `the token from ${source} was refused: was that plane restarted since (npm start writes a new one)? (${auth})`;
}

const HINTS: Record<string, Hint> = {
  unauthenticated: (_b, _s, _p, _r, source) => refused(source),
  unauthorized: (_b, _s, _p, _r, source) => refused(source),
  // A valid credential that may not do this: a crawler token on an admin route (the API's message says so),
  // or a Google identity that is not on the admin list.
  // The API's reason is kept: it names the identity gcloud sent (the usual mistake: another active account),
  // and a token with no verified email is not mended by the admin list.
  forbidden: (b) => {
    const said = typeof b.message === 'string' ? withoutUserinfo(b.message) : '';
    if (/crawler token/i.test(said))
      return 'that is a crawler token, which opens discovery and leases only: admin commands need an admin token in PROXYPLANE_ADMIN_TOKEN, and the crawler token belongs in PROXYPLANE_CRAWLER_TOKEN (PROXYPLANE_TOKEN, when set, is sent by every command before either)';
    if (/no verified email/i.test(said))
      return `${said}: the API's admins are named by email, and a service account's identity token carries one only when asked — \`PROXYPLANE_TOKEN="$(gcloud auth print-identity-token --impersonate-service-account=SA --include-email --audiences="$API")"\``;
    const admins =
      "ask for it to be added to the API's admin list (Terraform's admin_emails, ADMIN_EMAILS on the service), or check which account gcloud is using (`gcloud auth list`)";
    return said ? `${said}: ${admins}` : `your identity is valid but not an admin: ${admins}`;
  },
  // A proxy's own routes (…/spec, …/reconcile) answer not_found for an unknown proxy too; only the
  // API's catch-all says "no such route" (an API older than the route).
  not_found: (b, _s, path) =>
    /^\/v1\/(proxies\/[^/]+(\/spec|\/reconcile)?|gateway\/reclaims\/[^/]+)$/.test(path) &&
    !routeMissing('not_found', b)
      ? 'no such proxy: `proxyplane proxies list` shows the names'
      : `the API has no route ${path}: is it older than this CLI?`,
  // Answered to a retry of the create, after a 503 whose write may have landed all the same.
  already_exists: (_b, _s, _p, retried) =>
    retried
      ? 'the first attempt was answered 503 but may have created it: `proxyplane proxies get NAME` shows whether that proxy is the one just sent'
      : 'that name is taken: pick another, or `proxyplane proxies delete NAME` first',
  invalid_request: () => 'the API refused the input: see the issues below',
  invalid_json: () => 'the body was not JSON',
  immutable_field: () =>
    "`mode`, `provider` and a managed proxy's `zone` cannot change: create a new proxy and delete this one",
  port_not_allowed: (b) =>
    `the managed proxies' firewall opens only ${ports(b.allowedPorts)}: use one of those as the port, or open another in the deployment (Terraform's proxy_port) first`,
  deletion_requested: () => 'the proxy is being deleted; its spec is frozen',
  precondition_failed: (b) =>
    b.revision !== undefined
      ? `someone else kept changing the routing while this command wrote it (it is now at revision ${num(b.revision)}): run the command again`
      : `someone else changed the proxy since this command read it (it is now at generation ${num(b.generation)}): run the command again`,
  stored_routing_invalid: (b) =>
    `the stored routing (revision ${num(b.revision)}) no longer fits the route schema (edited by hand?): the gateways are sent the last routing published before it until \`proxyplane routing apply -f FILE\` replaces it`,
  conflict,
  // The limit is the route's (256 KiB for routing, 1 KiB for a reclaim, MAX_BODY_BYTES elsewhere): the
  // API's message names it in bytes.
  payload_too_large: (b) => {
    const bytes = /limited to (\d+) bytes/.exec(typeof b.message === 'string' ? b.message : '')?.[1];
    return bytes
      ? `the request is over the API's limit here, ${kib(Number(bytes))}`
      : "the request is over the API's body limit";
  },
  // A bug on the service's side: its log line (with the stack) carries this request id.
  internal: (b) =>
    typeof b.requestId === 'string' && b.requestId
      ? `the API failed on its side; its logs have the details under requestId ${b.requestId}`
      : 'the API failed on its side; its logs have the details',
  // The API says what could not be done (Cloud Scheduler, Google's signing keys, a proxy's credentials in
  // Secret Manager): a person needs that more than a generic line.
  unavailable: (b) =>
    typeof b.message === 'string' && b.message
      ? `the service could not do it right now (${withoutUserinfo(b.message)}): retry in a moment`
      : 'the service could not do it right now: retry in a few seconds',
  store_unavailable: () => 'Firestore is unavailable right now: retry in a few seconds',
  contended: () => 'too many callers on the same proxies: retry',
  not_ready: () => 'the lease service is still starting: retry in a few seconds',
  no_match: (b) =>
    `no proxy can be leased now: ${num(b.considered)} match the selector, ${num(b.atCapacity)} at capacity, ${num(b.inCooldown)} cooling down for the target${cooldownHint(b.cooldownEndsAt)}, ${num(b.unhealthy)} unhealthy${cordonHint(b.cordoned)}${gatewayHint(b.inGateway)}${protocolHint(b.otherProtocol)}`,
  unknown_lease: () => 'no such lease (it may have expired long ago)',
  lease_expired: () => 'the lease expired: acquire a new one',
  lease_released: () => 'the lease was released: acquire a new one',
  proxy_withdrawn: () =>
    'its proxy is being deleted, joined the gateway pool or moved to another address: acquire a new lease',
  proxy_cordoned: () =>
    'an operator cordoned its proxy: the lease runs to its expiry and is not renewed; acquire a new lease',
  invalid_selector: () => 'the selector must be key=value pairs of attribute keys',
  invalid_target: () => 'the target is a host or host:port',
  invalid_ttl: () => 'the TTL is out of range',
  unknown_field: () => 'the API did not expect a field (client and service versions differ?)',
  unknown_job: () => '`proxyplane jobs list` shows the job names',
  job_paused: () => 'the job is paused: `proxyplane jobs resume NAME` first',
  // Never retried (no Retry-After): the tick may have gone out, and a second run would be a second tick.
  outcome_unknown: () =>
    'Cloud Scheduler may have dispatched the tick before its answer was lost: `proxyplane jobs list` shows whether LAST TICK and LAST RUN moved; run it again only if they did not',
  method_not_allowed: () => 'the API does not support this call (client and service versions differ?)',
};

/**
 * 409 conflict is two things. A proxy write that kept losing its race to other writers: running it again
 * is the remedy. A job action Cloud Scheduler refuses for the job's state (`jobs run` of a DISABLED or
 * UPDATE_FAILED job, a pause or resume it cannot apply): the job stays so however often it is asked, and
 * only the API's message says why — "run the command again" in its stead sent operators round in circles.
 */
function conflict(b: Record<string, unknown>, status: number, path: string): string {
  if (/^\/v1\/proxies\//.test(path))
    return 'someone else kept changing the same proxy: run the command again';
  if (typeof b.message === 'string' && b.message) return withoutUserinfo(b.message);
  return `the API answered HTTP ${status}`;
}

const num = (v: unknown) => (typeof v === 'number' ? v : '?');
const kib = (bytes: number) => (bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`);
const ports = (v: unknown) =>
  Array.isArray(v) && v.length > 0 ? v.map((p) => `tcp:${num(p)}`).join(', ') : 'some ports';
// A 409 over cooldowns says when the first is leasable again (older services do not).
const cooldownHint = (v: unknown) => (typeof v === 'string' ? ` (the first until ${v})` : '');
// Only services that know cordons send `cordoned`; `proxyplane proxies uncordon NAME` gives one work again.
const cordonHint = (v: unknown) =>
  typeof v === 'number' && v > 0
    ? `, ${v} cordoned (\`proxyplane proxies uncordon NAME\` to lease it again)`
    : '';
// Only services that know the gateway send inGateway; a reclaim is what frees such a proxy for leases.
const gatewayHint = (v: unknown) =>
  typeof v === 'number' && v > 0
    ? `, ${v} held by the gateway (\`proxyplane gateway reclaim NAME\` frees one for leases once its owner drained it)`
    : '';

// Not part of "match the selector": proxies speaking a protocol the request did not ask for (SOCKS5 is
// opt-in). Only services that know `protocols` send it, as a count: which protocol they speak is not
// said, so the hint names the flag that takes either (it told a crawler that asked for http, the
// default, to ask for http).
const protocolHint = (v: unknown) =>
  typeof v === 'number' && v > 0
    ? `; ${v} more match the selector but speak a protocol not asked for (\`--protocol http,socks5\` leases either; SOCKS5 is opt-in)`
    : '';

export function hintFor(
  code: string,
  body: unknown,
  status: number,
  path = '',
  retried = false,
  tokenSource = 'none',
): string {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const hint = HINTS[code];
  if (hint) return hint(b, status, path, retried, tokenSource);
  if (typeof b.message === 'string' && b.message) return withoutUserinfo(b.message);
  return `the API answered HTTP ${status}`;
}

// Errno codes (ECONNREFUSED), undici's (UND_ERR_…) and TLS verification's (DEPTH_ZERO_SELF_SIGNED_CERT,
// CERT_HAS_EXPIRED — the one clue behind a TLS-intercepting proxy): a code is an upper-case word, never text.
const NETWORK_CODE = /^[A-Z][A-Z0-9_]+$/;

/**
 * Why fetch got no answer, as a code only. fetch wraps the socket error: TypeError("fetch failed") whose
 * cause has the errno code. Any other failure's message is never printed: some quote the request (a
 * refused header value is the whole "Bearer <token>").
 */
function networkReason(cause: unknown): string {
  const c = cause as { name?: unknown; cause?: { code?: unknown } } | null | undefined;
  const code = c?.cause?.code;
  if (typeof code === 'string' && NETWORK_CODE.test(code)) return code;
  if (c?.name === 'TimeoutError') return 'timed out';
  return 'no answer';
}

/**
 * The message of the network error Node's fetch gives for a port the Fetch standard blocks: undici's
 * `makeNetworkError('bad port')` in its fetch's mainFetch (lib/web/fetch/index.js), the Fetch standard's
 * own words for that step. Matched as text because there is nothing else to match: unlike a failed
 * connection (ECONNREFUSED, …, on its cause) the error carries no code, nor a class of its own. Seen with
 * Node 20.20 (undici 6.24); undici 7 (Node 24) has the same text. Should a Node word it otherwise, the
 * hint falls back to "no answer": hints.unit.test.ts and http.unit.test.ts try the real fetch, so such an
 * upgrade fails them instead of going unnoticed.
 */
export const BAD_PORT_MESSAGE = 'bad port';

/**
 * fetch's own refusal of a port the Fetch standard blocks (its "bad port" list: 6000, 10080, …): Node's
 * fetch rejects with TypeError("fetch failed") whose cause is Error("bad port"), and sends nothing. Read as
 * "no answer: is the plane running?", it sent people looking for a fault in a plane that was running.
 */
function refusedPort(cause: unknown): boolean {
  const inner = (cause as { cause?: unknown } | null | undefined)?.cause;
  return inner instanceof Error && inner.message === BAD_PORT_MESSAGE;
}

/** The port of `url` as fetch reads it: the scheme's default when the URL names none. */
function portOf(url: string): string {
  try {
    const u = new URL(url);
    return u.port || (u.protocol === 'https:' ? '443' : '80');
  } catch {
    return '?';
  }
}

function unreachableLine(err: UnreachableError): string {
  if (refusedPort(err.cause)) {
    return `error: unreachable — cannot reach ${err.url}: fetch refuses port ${portOf(err.url)} (one the Fetch standard blocks as a "bad port"): run the API on another port (--api / PROXYPLANE_API_URL, or another PROXYPLANE_PORT_OFFSET for a local plane)`;
  }
  return `error: unreachable — cannot reach ${err.url} (${networkReason(err.cause)}): is the plane running (npm start), or PROXYPLANE_API_URL set?`;
}

/**
 * The API quotes a refused value back in its issues (`endpoint.host … : "alice:s3cret@p.example"`): the
 * userinfo of a `user:password@host` is cut to `…@`, as the local file check does (proxy-file.ts), so that
 * `proxies patch` with credentials in a host does not print the password on stderr (or into a CI log).
 */
export const withoutUserinfo = (text: string) =>
  text
    // A quoted value (JSON, as the API quotes it): everything up to its last '@' when a ':' comes before
    // it, whatever the password holds (a space, a quote, an apostrophe), as proxy-file.ts cuts a host.
    .replace(/"((?:[^"\\]|\\.)*)"/g, (quoted, inner: string) =>
      /:.*@/s.test(inner) ? `"…@${inner.slice(inner.lastIndexOf('@') + 1)}"` : quoted,
    )
    .replace(/[^\s"'@]*:[^\s"']*@/g, '…@');

/** What the CLI prints on stderr for a failure, and the exit code. */
export function describeFailure(err: unknown): { lines: string[]; exitCode: number } {
  if (err instanceof PartialError) {
    const { lines, exitCode } = describeFailure(err.failure);
    return { lines: [...lines, ...err.notes.map((n) => `  ${n}`)], exitCode };
  }
  if (err instanceof ApiCallError) {
    const lines: string[] = [];
    const issues = (err.body as { issues?: unknown } | null)?.issues;
    if (Array.isArray(issues)) {
      for (const i of issues as Array<{ path?: string; message?: string }>) {
        lines.push(`  ${i.path || '(body)'}: ${withoutUserinfo(i.message ?? '')}`);
      }
    }
    lines.unshift(
      `error: ${err.code} — ${hintFor(err.code, err.body, err.status, err.path, err.retried, err.tokenSource)}`,
    );
    return { lines, exitCode: 1 };
  }
  if (err instanceof StaleFileError) {
    return {
      lines: [`error: precondition_failed — ${err.message}`, ...err.details.map((d) => `  ${d}`)],
      exitCode: 1,
    };
  }
  if (err instanceof BadResponseError) {
    return {
      lines: [`error: bad_response — ${err.message}`, ...err.details.map((d) => `  ${withoutUserinfo(d)}`)],
      exitCode: 1,
    };
  }
  if (err instanceof UnreachableError) return { lines: [unreachableLine(err)], exitCode: 1 };
  if (err instanceof InputError) {
    return {
      lines: [`error: invalid_input — ${err.message}`, ...err.details.map((d) => `  ${d}`)],
      exitCode: 2,
    };
  }
  if (err instanceof UsageError) {
    return {
      lines: [`error: usage — ${err.message}`, 'run `proxyplane --help` for the commands'],
      exitCode: 2,
    };
  }
  return { lines: [`error: internal — ${err instanceof Error ? err.message : String(err)}`], exitCode: 1 };
}
