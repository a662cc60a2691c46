// The gateway's configuration, parsed once by the entry point from (argv, env) — nothing below main.ts
// reads process.env. Durations are milliseconds unless the name says otherwise.
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { envNumber } from '../../../shared/src/config/env.js';
import { BEARER_TOKEN } from '../../../shared/src/domain/bearer-token.js';
import { urlCarriesCredentials } from '../../../shared/src/domain/health-check-url.js';
import { WorkerId } from '../../../shared/src/messages/gateway-snapshot.js';
import { GC_MARKING_MODES } from './gc-marking.js';
import { LOG_LEVELS } from './logger.js';
import { PLAIN_HTTP_SETTINGS } from './plain-http.js';

const int = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  envNumber(z.number().int().min(min).max(max)).default(def);
/**
 * The longest delay a Node timer holds (setTimeout, setInterval, AbortSignal.timeout): a longer one fires
 * after 1 ms, which would turn a timeout into an instant failure and a period into a tight loop.
 */
const TIMER_MAX_MS = 2 ** 31 - 1;
/** A duration that ends up in a timer. */
const timerMs = (def: number, min = 0) => int(def, min, TIMER_MAX_MS);
const timerSeconds = (def: number, min = 0) => int(def, min, Math.floor(TIMER_MAX_MS / 1000));
const list = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

/** A nameserver as c-ares' setServers takes it: "ip", "ipv4:port" or "[ipv6]:port". */
const isNameserver = (s: string): boolean => {
  if (isIP(s) !== 0) return true;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(s);
  if (!m || Number(m[3]) < 1 || Number(m[3]) > 65535) return false;
  return m[1] !== undefined ? isIP(m[1]) === 6 : isIP(m[2]!) === 4;
};
const Nameservers = list.refine((xs) => xs.every(isNameserver), {
  message: 'each nameserver is an IP address, ipv4:port or [ipv6]:port',
});

/** "user:pass,user2:pass2" (or one pair per line) or a JSON array of {"username","password"}. */
const Users = z
  .string()
  .default('')
  .transform((s, ctx) => {
    const text = s.trim();
    if (!text) return [];
    if (text.startsWith('[')) {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        // Not the SyntaxError itself: its message quotes the text around the fault — a password.
        json = undefined;
      }
      const parsed = z
        .array(
          z.object({
            // Basic credentials split at the first colon (RFC 7617): a user named with one never signs in.
            username: z
              .string()
              .min(1)
              .refine((u) => !u.includes(':'), 'a user name without ":"'),
            password: z.string().min(1),
          }),
        )
        .safeParse(json);
      if (parsed.success) return parsed.data;
      ctx.addIssue({ code: 'custom', message: 'GATEWAY_CLIENT_USERS: a JSON array of {username, password}' });
      return z.NEVER;
    }
    // Pairs are separated by commas or line ends, so one pair per line works too (a secret written from a
    // file, `--data-file=users.txt`): were lines not separators, the first user would take the rest of the
    // file as its password and every client be answered 407. Empty entries are no pairs (a CRLF file
    // joined with commas on the CONNECT VMs ends in one).
    return text
      .split(/[,\r\n]+/)
      .filter((pair) => pair.trim() !== '')
      .map((pair) => {
        const i = pair.indexOf(':');
        // An empty password too ("crawler:", a `crawler:$PASS` whose variable was unset): the JSON form
        // refuses one, and anyone who knew the user name would have been let in.
        if (i <= 0 || i === pair.length - 1)
          ctx.addIssue({ code: 'custom', message: 'GATEWAY_CLIENT_USERS: user:password pairs' });
        return { username: pair.slice(0, i).trim(), password: pair.slice(i + 1) };
      });
  });

export const GatewayEnv = z.object({
  HOST: z.string().default('0.0.0.0'),
  /** The HTTP listener (/v1/fetch, /healthz, /metrics): Cloud Run's $PORT. */
  PORT: int(8080, 0, 65535),
  GATEWAY_PROXY_HOST: z.string().optional(),
  /** The CONNECT / absolute-URI listener; "off" where raw TCP cannot reach (Cloud Run). */
  GATEWAY_PROXY_PORT: z.union([z.literal('off'), int(8081, 0, 65535)]).default(8081),
  GATEWAY_SNAPSHOT_FILE: z.string().optional(),
  /**
   * How plain HTTP reaches an upstream: "auto" (per upstream, from the snapshot's filtersDestinations),
   * or for every upstream "pinned" (a CONNECT to the address the SSRF guard checked) or "absolute-uri"
   * (absolute form with the host name). See docs/gateway.md § Plain HTTP.
   */
  GATEWAY_PLAIN_HTTP: z.enum(PLAIN_HTTP_SETTINGS).default('auto'),
  /** How V8 marks the old generation: "atomic" (incremental marking off) or "incremental" (gc-marking.ts). */
  GATEWAY_GC_MARKING: z.enum(GC_MARKING_MODES).default('atomic'),
  /** Controller mode: the API's base URL (docs/gateway-control-plane.md). Absent: standalone file mode. */
  CONTROL_PLANE_URL: z
    .url({ protocol: /^https?$/ })
    // The worker authenticates with its token or a Google ID token; a user:password@ in the URL would only
    // reach the logs (fetch refuses such a URL, quoting it whole, on every call).
    .refine((u) => !urlCarriesCredentials(u), 'CONTROL_PLANE_URL must not carry credentials (user:password@)')
    .optional(),
  /** The logical worker; controller mode defaults to "gw-" + the start of this process's instance id. */
  GATEWAY_WORKER_ID: WorkerId.optional(),
  /** A worker token (the API's WORKER_TOKENS); without one, a Google identity token for CONTROL_PLANE_URL. */
  GATEWAY_WORKER_TOKEN: z
    .string()
    .trim() // a value from a CRLF .env file or a secret file keeps its line end
    .min(16)
    // fetch refuses a header value with a line break in a TypeError that quotes the whole value, and that
    // error would be logged: refuse it here, where the message names only the variable.
    .regex(BEARER_TOKEN, 'a bearer token (RFC 6750: letters, digits, -._~+/ and trailing =)')
    .optional(),
  /** "none": send no credential (a local API whose worker auth is off). */
  GATEWAY_WORKER_AUTH: z.enum(['google', 'none']).default('google'),
  /** Informational, sent at registration; defaults to REGION. */
  GATEWAY_ZONE: z
    .string()
    .regex(/^[a-z0-9][-a-z0-9]{0,62}$/)
    .optional(),
  GATEWAY_CONTROL_TIMEOUT_MS: timerMs(10_000, 100),
  /**
   * Controller mode: how long to wait for a first snapshot before listening anyway (503 no_snapshot). At
   * most 90 s: nothing listens meanwhile, /healthz included, and Cloud Run's startup probe gives up at
   * 120 s (terraform/run.tf) — past it, with no snapshot coming (an outage, a pool with nothing for this
   * worker), the instance was killed and started again, a new worker each time, instead of listening.
   */
  GATEWAY_START_WAIT_SECONDS: int(15, 0, 90),
  /** The `gateway.snapshot_age` log line Terraform's alert counts. */
  GATEWAY_SNAPSHOT_AGE_LOG_SECONDS: timerSeconds(30, 1),
  /**
   * The `gateway.traffic` line (traffic-log.ts): deltas since the line before. At most 60 s: the alerts on it
   * (terraform/monitoring.tf) read 5-minute windows, which must hold several lines of every worker.
   */
  GATEWAY_TRAFFIC_LOG_SECONDS: int(30, 1, 60),
  GOOGLE_CLOUD_PROJECT: z.string().optional(),
  REGION: z.string().optional(),
  PUBSUB_EMULATOR_HOST: z.string().optional(),
  SECRET_MANAGER_EMULATOR_HOST: z.string().optional(),
  GATEWAY_CLIENT_USERS: Users,
  /** "none" disables client auth entirely (local experiments); anything else requires it. */
  GATEWAY_CLIENT_AUTH: z.enum(['required', 'none']).default('required'),
  GATEWAY_FETCH_TOKENS: list,
  /** SSRF allow-list: CIDRs and host:port entries. */
  GATEWAY_SSRF_ALLOW: list,
  /** 0 = no age bound (standalone). Controller mode takes registration's value; this may only tighten it. */
  GATEWAY_MAX_STALE_AGE_SECONDS: int(0),
  GATEWAY_MAX_HEADER_BYTES: int(16 * 1024, 1024, 1024 * 1024),
  GATEWAY_HEADER_TIMEOUT_MS: timerMs(10_000, 100),
  GATEWAY_UPSTREAM_TIMEOUT_MS: timerMs(10_000, 100),
  GATEWAY_IDLE_TIMEOUT_MS: timerMs(300_000, 1000),
  /**
   * How long an idle kept-alive upstream connection (absolute-form plain HTTP) is kept: below squid's
   * 2 min and a Node server's 5 s keep-alive, so the gateway normally closes first. 0: no keep-alive.
   */
  GATEWAY_UPSTREAM_KEEPALIVE_MS: int(4_000, 0, 600_000),
  /**
   * Idle kept-alive connections per upstream address and credentials; more are closed as their responses end.
   * 0: none kept (keep-alive off, as GATEWAY_UPSTREAM_KEEPALIVE_MS 0).
   */
  GATEWAY_UPSTREAM_MAX_IDLE: int(64, 0, 10_000),
  GATEWAY_LINGER_MS: timerMs(5_000, 100),
  GATEWAY_MAX_CONNECTIONS: int(20_000, 1),
  /**
   * Proxy listener: connections one source address may hold whose request is not admitted yet (nothing
   * sent, half a head, a refusal lingering); more are closed at accept. Unset: maxPreAuthPerSource().
   */
  GATEWAY_MAX_PREAUTH_PER_SOURCE: envNumber(z.number().int().min(1)).optional(),
  /** Cloud Run allows 10 s between SIGTERM and SIGKILL. */
  GATEWAY_DRAIN_TIMEOUT_MS: timerMs(6_500, 0),
  /** A proxy drained away from this worker keeps its open requests this long, then they are cut; 0: never. */
  GATEWAY_PROXY_DRAIN_TIMEOUT_MS: timerMs(300_000, 0),
  GATEWAY_OUTCOME_QUEUE_SIZE: int(10_000, 1),
  GATEWAY_STICKY_TABLE_SIZE: int(100_000, 1),
  GATEWAY_DNS_CACHE_SECONDS: int(30, 0),
  /** Nameservers for target names ("ip" or "ip:port", comma-separated); empty: the system's. */
  GATEWAY_DNS_SERVERS: Nameservers,
  /** A target name's DNS query attempt (two attempts, the second twice as long). */
  GATEWAY_DNS_TIMEOUT_MS: int(2_000, 100, 30_000),
  GATEWAY_CREDENTIALS_TTL_SECONDS: int(300, 0),
  GATEWAY_FETCH_MAX_BODY_BYTES: int(1024 * 1024, 0),
  GATEWAY_FETCH_MAX_RESPONSE_BYTES: int(64 * 1024 * 1024, 0),
  GATEWAY_FETCH_TIMEOUT_MS: timerMs(30_000, 100),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
});
export type GatewayConfig = z.infer<typeof GatewayEnv> & { snapshotFile: string | undefined };

/**
 * GATEWAY_MAX_PREAUTH_PER_SOURCE, by default a tenth of GATEWAY_MAX_CONNECTIONS: one source cannot lock the
 * listener's connections up, and a crawler host opening many connections at once keeps ample room.
 */
export const maxPreAuthPerSource = (
  cfg: Pick<GatewayConfig, 'GATEWAY_MAX_PREAUTH_PER_SOURCE' | 'GATEWAY_MAX_CONNECTIONS'>,
): number => cfg.GATEWAY_MAX_PREAUTH_PER_SOURCE ?? Math.max(1, Math.floor(cfg.GATEWAY_MAX_CONNECTIONS / 10));

export class ConfigError extends Error {
  readonly kind = 'config';
}

export function loadGatewayConfig(
  argv: string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): GatewayConfig {
  const { values } = parseArgs({ args: argv, options: { snapshot: { type: 'string' } }, strict: true });
  const parsed = GatewayEnv.safeParse(env);
  if (!parsed.success) throw new ConfigError(z.prettifyError(parsed.error), { cause: parsed.error });
  const cfg = { ...parsed.data, snapshotFile: values.snapshot ?? parsed.data.GATEWAY_SNAPSHOT_FILE };
  if (cfg.CONTROL_PLANE_URL && cfg.snapshotFile) {
    throw new ConfigError('CONTROL_PLANE_URL and a snapshot file exclude each other: pick one source');
  }
  if (cfg.CONTROL_PLANE_URL && !cfg.GOOGLE_CLOUD_PROJECT) {
    throw new ConfigError('controller mode needs GOOGLE_CLOUD_PROJECT (Pub/Sub and Secret Manager)');
  }
  if (
    cfg.GATEWAY_CLIENT_AUTH === 'required' &&
    cfg.GATEWAY_CLIENT_USERS.length === 0 &&
    cfg.GATEWAY_FETCH_TOKENS.length === 0
  ) {
    throw new ConfigError(
      'no client credentials: set GATEWAY_CLIENT_USERS (or GATEWAY_CLIENT_AUTH=none for a local experiment)',
    );
  }
  return cfg;
}
