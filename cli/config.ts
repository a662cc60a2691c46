// Where the API is and which credential to present, from (flags, env) so that tests pass their own.
//   API:   --api URL, else PROXYPLANE_API_URL (unless empty), else the local plane's (firebase.json + PROXYPLANE_PORT_OFFSET).
//   Token: PROXYPLANE_TOKEN, else the role's own variable (PROXYPLANE_ADMIN_TOKEN for admin commands,
//          PROXYPLANE_CRAWLER_TOKEN then PROXYPLANE_ADMIN_TOKEN for leases: the API accepts admin
//          credentials there too; PROXYPLANE_ADMIN_TOKEN then PROXYPLANE_CRAWLER_TOKEN for `proxies list`,
//          discovery, which crawler tokens open too), else the tokens a running local plane wrote to its state.json when the
//          URL is that plane's, else `gcloud auth print-identity-token` when gcloud is on PATH and the URL is https or
//          this machine's and named (--api, PROXYPLANE_API_URL: the default port may be anyone's) — the admin's own
//          Google identity is not sent in the clear elsewhere — else none
//          (a local API with auth off needs none).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { loadLocalPorts, portOffsetOf, repoRoot } from '../shared/src/config/local-ports.js';
import { isLoopbackHost } from '../shared/src/domain/gateway/ssrf.js';
import { UsageError } from './errors.js';

/** admin: admin-only routes. crawler: the lease routes. discovery: GET /v1/proxies, which takes either. */
export type Role = 'admin' | 'crawler' | 'discovery';

export interface CliEnv {
  [key: string]: string | undefined;
}

export function defaultApiUrl(env: CliEnv): string {
  const { api } = loadLocalPorts();
  let offset: number;
  try {
    offset = portOffsetOf(env.PROXYPLANE_PORT_OFFSET);
  } catch (err) {
    throw err instanceof RangeError ? new UsageError(err.message) : err;
  }
  return `http://${api.host}:${api.port + offset}`;
}

/**
 * $PROXYPLANE_API_URL, or undefined when it is unset or blank: read as the token variables are, so that
 * `PROXYPLANE_API_URL= npx proxyplane …` (or a blank line of an env file) means the local plane, not the
 * URL "" (bad usage).
 */
function apiUrlFromEnv(env: CliEnv): string | undefined {
  return env.PROXYPLANE_API_URL?.trim() || undefined;
}

export function resolveApiUrl(flag: string | undefined, env: CliEnv): string {
  const raw = flag ?? apiUrlFromEnv(env) ?? defaultApiUrl(env);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`not a URL: ${withoutUserinfo(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError(`not an http(s) URL: ${withoutUserinfo(raw)}`);
  // fetch refuses such a URL (it never sends it), and the refusal read as "unreachable" with the URL —
  // password included — on stderr. The API takes a bearer token, never URL credentials.
  if (url.username || url.password) {
    throw new TypeError(
      `credentials in the URL are never sent (the API takes a bearer token: PROXYPLANE_TOKEN): drop them from ${withoutUserinfo(raw)}`,
    );
  }
  // Paths are appended to it: `http://h:18300?x=1` (pasted from a browser) sent every call to `/?x=1/v1/…`,
  // and the API's 404 read as "is it older than this CLI?".
  // Named without them: the local plane's fleet link carries the admin token in its query (`?token=…`).
  const shown = withoutUserinfo(raw);
  if (url.search || url.hash || /[?#]/.test(shown)) {
    throw new TypeError(
      `the API URL takes no query or fragment: drop its ?… or #… (${shown.replace(/[?#].*/s, '')}…)`,
    );
  }
  return raw.replace(/\/+$/, '');
}

/** The URL with everything up to its last '@' after the scheme cut to `…@`, whatever the password holds
 *  ('/', '#', '@'): a user's password is never printed, even from a URL that does not parse. */
const withoutUserinfo = (raw: string) => raw.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)?.*@/s, '$1…@');

export interface TokenSources {
  env: CliEnv;
  /** The local plane's state.json (null when absent). */
  localState(): { env?: Record<string, string> } | null;
  /** A gcloud identity token, or null when gcloud is missing or fails. */
  gcloudToken(): string | null;
}

export interface ResolvedToken {
  token: string | null;
  /** Where it came from, for `--verbose` and error hints (never the token itself). */
  source: string;
}

const ROLE_VARS: Record<Role, string[]> = {
  admin: ['PROXYPLANE_TOKEN', 'PROXYPLANE_ADMIN_TOKEN'],
  crawler: ['PROXYPLANE_TOKEN', 'PROXYPLANE_CRAWLER_TOKEN', 'PROXYPLANE_ADMIN_TOKEN'],
  // An admin credential first (an admin sees the whole spec), else a crawler's: the listing is theirs too.
  discovery: ['PROXYPLANE_TOKEN', 'PROXYPLANE_ADMIN_TOKEN', 'PROXYPLANE_CRAWLER_TOKEN'],
};

/** resolveToken's source for a token `gcloud auth print-identity-token` printed (http.ts refreshes those). */
export const GCLOUD_SOURCE = 'gcloud auth print-identity-token';

/**
 * `urlNamed`: the API URL came from --api or $PROXYPLANE_API_URL, not the local plane's default. Only a
 * URL the user named gets gcloud's token over plain http to this machine: the default port is anyone's on
 * a shared machine — with no plane running, a listener another user put on 18300 was sent the admin's
 * Google identity (and a second one when it answered 401).
 */
export function resolveToken(role: Role, apiUrl: string, src: TokenSources, urlNamed = true): ResolvedToken {
  for (const name of ROLE_VARS[role]) {
    const v = src.env[name]?.trim();
    if (v) return { token: v, source: name };
  }
  const state = src.localState();
  if (state?.env && state.env.PROXYPLANE_API_URL?.replace(/\/+$/, '') === apiUrl) {
    for (const name of ROLE_VARS[role]) {
      const v = state.env[name];
      if (v) return { token: v, source: 'the local plane (state.json)' };
    }
  }
  // Not asked for: gcloud's token is the admin's own Google identity, replayable for its hour wherever it
  // lands (api.md § Authentication). Sent unasked over plain http to another machine — a typo'd host, a
  // colleague's dev plane — it crossed the network in the clear, and a 401 there fetched a second one.
  if (!gcloudTokenMayGo(apiUrl)) return { token: null, source: GCLOUD_WITHHELD };
  if (!urlNamed && !apiUrl.startsWith('https:')) return { token: null, source: GCLOUD_UNNAMED };
  const gcloud = src.gcloudToken();
  if (gcloud) return { token: gcloud, source: GCLOUD_SOURCE };
  return { token: null, source: 'none' };
}

/** resolveToken's source when the API URL is plain http to another machine: no token sent, gcloud not run. */
export const GCLOUD_WITHHELD = 'none: the gcloud identity token goes only over https or to this machine';

/** resolveToken's source when the API URL is the local plane's default and no plane's token matched. */
export const GCLOUD_UNNAMED =
  'none: the gcloud identity token goes to this machine only at a URL named with --api or PROXYPLANE_API_URL';

/** Whether the API URL was named (--api, $PROXYPLANE_API_URL), not the local plane's default. */
export const apiUrlNamed = (flag: string | undefined, env: CliEnv): boolean =>
  flag !== undefined || apiUrlFromEnv(env) !== undefined;

/** Whether gcloud's token may go to `apiUrl`: over https, or to a loopback host (`gcloud run services proxy`). */
function gcloudTokenMayGo(apiUrl: string): boolean {
  let url: URL;
  try {
    url = new URL(apiUrl);
  } catch {
    return false;
  }
  if (url.protocol === 'https:') return true;
  // The gateway's own classification of this machine's addresses and names (IPv4-mapped forms included).
  return isLoopbackHost(url.hostname.replace(/^\[(.*)\]$/, '$1'));
}

export function readLocalState(env: CliEnv): { env?: Record<string, string> } | null {
  const dir = env.PROXYPLANE_STATE_DIR || '.local-plane'; // empty is unset, as npm start reads it
  const file = join(isAbsolute(dir) ? dir : join(repoRoot, dir), 'state.json');
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { env?: Record<string, string> };
  } catch {
    return null;
  }
}

function onPath(cmd: string, env: CliEnv): boolean {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, cmd), constants.X_OK);
      return true;
    } catch {
      // not here
    }
  }
  return false;
}

/** Spawned only when gcloud exists: a missing gcloud must not cost a failed spawn per command. */
export function gcloudIdentityToken(env: CliEnv): string | null {
  if (!onPath('gcloud', env)) return null;
  const r = spawnSync('gcloud', ['auth', 'print-identity-token'], {
    env: env as NodeJS.ProcessEnv,
    encoding: 'utf8',
    timeout: 20_000,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const token = r.status === 0 ? r.stdout.trim() : '';
  return token || null;
}

export function tokenSources(env: CliEnv): TokenSources {
  return { env, localState: () => readLocalState(env), gcloudToken: () => gcloudIdentityToken(env) };
}
