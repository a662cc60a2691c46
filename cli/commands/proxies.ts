// proxyplane proxies create -f FILE | list [--attr k=v] [--phase P] [--protocol P] [--page-size N] | get NAME
// | delete NAME
import { hostPort } from '../../shared/src/domain/endpoint-host.js';
import { SUSPECT_REASONS } from '../../shared/src/domain/health/verdict-reason.js';
import { MAX_LIST_PAGE_SIZE, refusesPaging } from '../../shared/src/domain/leases/wire.js';
import { ProxyName, ProxyProtocol } from '../../shared/src/domain/proxy.js';
import { exactlyOne, keyValues, none, outputOf } from '../args.js';
import type { Ctx } from '../context.js';
import { ApiCallError, BadResponseError, InputError, PartialError, UsageError } from '../errors.js';
import { age, attrs, json, ms, table, yaml } from '../output.js';
import { readProxyFile } from '../proxy-file.js';

export const PHASES = ['Pending', 'Provisioning', 'Provisioned', 'Ready', 'Unhealthy', 'Deleting', 'Failed'];

/** DELETE's answer for a stored document that does not fit the model (docs/api.md § Delete). */
interface InvalidProxyDeletion {
  name: string;
  storedProxyInvalid: { issues: Array<{ path: string }> };
}

/** The admin API's proxy resource, as far as the CLI reads it. */
export interface ProxyJson {
  name: string;
  createdAt: string;
  deletionRequestedAt: string | null;
  spec: {
    mode: 'managed' | 'external';
    zone?: string;
    endpoint?: { host: string; port: number; protocol?: 'http' | 'socks5' };
    attributes?: Record<string, string>;
    capacity?: number;
    /** Absent from an API older than cordons. */
    cordoned?: boolean;
  };
  status: {
    phase: string;
    ip: string | null;
    latencyMillis: number | null;
    conditions: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}

const enc = encodeURIComponent;

/**
 * The one NAME of `proxies get|delete|patch|reconcile`, checked as the API checks it (a DNS label) before
 * anything is sent: `.` and `..` are dot-segments the request URL would resolve away (`delete ..` asked for
 * DELETE /v1/), answered as a route the API lacks.
 */
export function proxyNameArg(positionals: string[]): string {
  const name = exactlyOne(positionals, 'proxy NAME');
  const parsed = ProxyName.safeParse(name);
  if (!parsed.success) {
    const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
    throw new InputError(`not a proxy name: ${shown} ${parsed.error.issues[0]?.message ?? ''}`.trim());
  }
  return name;
}

export const proxyOptions = {
  file: { type: 'string', short: 'f' },
  attr: { type: 'string', multiple: true },
  phase: { type: 'string' },
  protocol: { type: 'string' },
  'page-size': { type: 'string' },
} as const;

/**
 * `proxies list` asks for the listing this many proxies a request and follows every page: an admin's
 * listing carries each proxy's inline cloud-init (up to 32 KiB), and 500 of them keep an answer to ~17 MB
 * at most (the API ends a page at 16 MiB of proxies anyway, whatever it was asked for).
 */
export const LIST_PAGE_SIZE = 500;

/** What GET /v1/proxies answers (a page of it, with pageSize), as far as the CLI reads it. */
interface ProxyListJson {
  proxies: ProxyJson[];
  count: number;
  skipped?: { count: number; names: string[] };
  redacted?: string[];
  nextPageToken?: string | null;
}
/** The refusal of an API older than paging: pageSize is a query parameter it does not read. */
function pagingUnknown(err: unknown): boolean {
  if (!(err instanceof ApiCallError) || err.status !== 400 || err.code !== 'invalid_request') return false;
  return refusesPaging(err.body);
}

/** As many names of skipped documents as one answer of the API gives (its `skipped.names`). */
const MAX_SKIPPED_NAMES = 100;

export async function createProxies({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const file = args.values.file as string | undefined;
  if (!file) throw new UsageError('proxies create needs -f FILE (YAML or JSON; - for stdin)');
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const proxies = await readProxyFile(io, file);
  const created: ProxyJson[] = [];
  for (const [i, p] of proxies.entries()) {
    try {
      created.push(await api.call<ProxyJson>('POST', '/v1/proxies', { role: 'admin', body: p.body }));
    } catch (err) {
      // Several: also which were created before it and which were not sent — with -o json or yaml nothing
      // else tells a script that the ones before it exist now (as apply says, stoppedNotes).
      if (proxies.length === 1) throw err;
      throw new PartialError(err, [stoppedAt(proxies, i)]);
    }
    if (output === 'table') io.out(`proxy/${p.name} created`);
  }
  if (output === 'json') io.out(json(created.length === 1 ? created[0] : created));
  if (output === 'yaml') io.out(created.map(yaml).join('\n---\n'));
}

function stoppedAt(proxies: Array<{ name: string }>, failedAt: number): string {
  const list = (ps: Array<{ name: string }>) => ps.map((p) => `proxy/${p.name}`).join(', ');
  const before = proxies.slice(0, failedAt);
  const rest = proxies.slice(failedAt + 1);
  return [
    `stopped at proxy/${proxies[failedAt]!.name} (${failedAt + 1} of ${proxies.length}): `,
    before.length === 0 ? 'nothing created before it' : `created before it: ${list(before)}`,
    rest.length === 0 ? '' : `; not sent: ${list(rest)}`,
  ].join('');
}

/** The Healthy column: `suspect` for a SUSPECT verdict (Healthy=True, ranked below sound proxies by lease
 *  selection), as the fleet page shows it — `yes` there hid a proxy the gateways keep failing. */
export function healthyOf(p: ProxyJson): string {
  const c = p.status.conditions.find((x) => x.type === 'Healthy');
  if (!c) return '-';
  if (c.status === 'True') return SUSPECT_REASONS.has(c.reason ?? '') ? 'suspect' : 'yes';
  return c.status === 'False' ? 'no' : '?';
}

/** A managed proxy's zone; an external one's host:port, prefixed `socks5://` when it speaks SOCKS5. */
export function locationOf(p: ProxyJson): string {
  if (p.spec.mode === 'managed') return p.spec.zone ?? '-';
  const e = p.spec.endpoint;
  const scheme = e?.protocol && e.protocol !== 'http' ? `${e.protocol}://` : '';
  return e ? `${scheme}${hostPort(e.host, e.port)}` : '-';
}

export async function listProxies({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const query = new URLSearchParams();
  const phase = args.values.phase as string | undefined;
  if (phase !== undefined) {
    const canonical = PHASES.find((p) => p.toLowerCase() === phase.toLowerCase());
    if (!canonical) throw new UsageError(`--phase must be one of ${PHASES.join(', ')}, got "${phase}"`);
    query.set('phase', canonical);
  }
  // One protocol, as the API filters by one (`protocol=`): the proxies a lease asking for it would consider.
  const protocol = args.values.protocol as string | undefined;
  if (protocol !== undefined) {
    const known = ProxyProtocol.options.find((p) => p === protocol.toLowerCase());
    if (!known) {
      throw new UsageError(
        `--protocol must be one of ${ProxyProtocol.options.join(', ')}, got "${protocol}"`,
      );
    }
    query.set('protocol', known);
  }
  for (const [k, v] of Object.entries(keyValues(args.values.attr as string[] | undefined, '--attr'))) {
    query.append(`attr.${k}`, v);
  }
  const rawSize = args.values['page-size'] as string | undefined;
  const pageSize = rawSize === undefined ? LIST_PAGE_SIZE : Number(rawSize);
  if (rawSize !== undefined && (!/^[0-9]+$/.test(rawSize) || pageSize < 1 || pageSize > MAX_LIST_PAGE_SIZE)) {
    throw new UsageError(`--page-size must be an integer in 1–${MAX_LIST_PAGE_SIZE}, got "${rawSize}"`);
  }
  // Discovery: a crawler token opens it too (docs/leases.md), so a crawler can list what it could lease.
  // Every page, merged into the one listing the API answered before it paged (`count`: all of them).
  const res: Omit<ProxyListJson, 'nextPageToken'> = { proxies: [], count: 0 };
  let token: string | null | undefined;
  const sent = new Set<string>();
  do {
    const paged = new URLSearchParams(query);
    paged.set('pageSize', String(pageSize));
    if (token) {
      paged.set('pageToken', token);
      sent.add(token);
    }
    const page = await api
      .call<ProxyListJson>('GET', '/v1/proxies', { role: 'discovery', query: paged })
      .catch((err: unknown) => {
        // An API older than paging refuses pageSize as a parameter it does not read: asked once, unpaged.
        if (token || !pagingUnknown(err)) throw err;
        return api.call<ProxyListJson>('GET', '/v1/proxies', { role: 'discovery', query });
      });
    res.proxies.push(...page.proxies);
    res.count = res.proxies.length;
    if (page.skipped) {
      const names = [...(res.skipped?.names ?? []), ...page.skipped.names].slice(0, MAX_SKIPPED_NAMES);
      res.skipped = { count: (res.skipped?.count ?? 0) + page.skipped.count, names };
    }
    if (page.redacted) res.redacted = page.redacted;
    // The token advances with every page (it names the last proxy read): one already sent (the same token
    // again, or A → B → A) would never end, collecting pages.
    if (page.nextPageToken && sent.has(page.nextPageToken)) {
      throw new BadResponseError('GET /v1/proxies answered a page token it was already sent as the next one');
    }
    token = page.nextPageToken;
  } while (token);
  if (output === 'json') return io.out(json(res));
  if (output === 'yaml') return io.out(yaml(res));
  // On stderr: the table stays what a script parses, and the operator still learns of them.
  if (res.skipped?.count) {
    const more = res.skipped.count > res.skipped.names.length ? ', …' : '';
    io.err(
      `${res.skipped.count} stored proxy document(s) do not fit the model and are not listed: ${res.skipped.names.join(', ')}${more} (proxies get <name> says why; proxies delete <name> removes it)`,
    );
  }
  if (res.proxies.length === 0) return io.out('No proxies match.');
  const now = io.now();
  io.out(
    table(
      ['NAME', 'MODE', 'LOCATION', 'PHASE', 'HEALTHY', 'LATENCY', 'IP', 'ATTRIBUTES', 'AGE'],
      res.proxies.map((p) => [
        p.name,
        p.spec.mode,
        locationOf(p),
        phaseOf(p),
        healthyOf(p),
        ms(p.status.latencyMillis),
        p.status.ip ?? '-',
        attrs(p.spec.attributes),
        age(p.createdAt, now),
      ]),
    ),
  );
}

/** The phase, and what an operator asked of the proxy that the phase does not say yet: `Ready (cordoned)`. */
function phaseOf(p: ProxyJson): string {
  const asked = [
    p.deletionRequestedAt && p.status.phase !== 'Deleting' ? 'deleting' : null,
    p.spec.cordoned ? 'cordoned' : null,
  ].filter((m) => m !== null);
  return asked.length ? `${p.status.phase} (${asked.join(', ')})` : p.status.phase;
}

export async function getProxy({ api, io, args }: Ctx): Promise<void> {
  const name = proxyNameArg(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const p = await api.call<ProxyJson>('GET', `/v1/proxies/${enc(name)}`, { role: 'admin' });
  io.out(output === 'json' ? json(p) : yaml(p));
}

export async function deleteProxy({ api, io, args }: Ctx): Promise<void> {
  const name = proxyNameArg(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const p = await api.call<ProxyJson | InvalidProxyDeletion>('DELETE', `/v1/proxies/${enc(name)}`, {
    role: 'admin',
  });
  if (output === 'json') return io.out(json(p));
  if (output === 'yaml') return io.out(yaml(p));
  if ('storedProxyInvalid' in p) {
    const fields = p.storedProxyInvalid.issues.map((i) => i.path).join(', ');
    return io.out(
      `proxy/${name} deletion requested; its stored document does not fit the model (${fields}): reconcile removes the document, the orphan GC its instance — unless the GC’s brake refuses its sweeps, and then an operator by hand (docs/api.md § Delete)`,
    );
  }
  // An external proxy has no instance: reconcile only lets go of it (docs/api.md § Delete).
  const until = p.spec.mode === 'external' ? 'reconcile removes it' : 'its instance is gone';
  io.out(`proxy/${name} deletion requested (phase Deleting until ${until})`);
}
