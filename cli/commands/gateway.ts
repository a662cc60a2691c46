// proxyplane gateway workers [--all] | ownership | reclaim NAME [--ttl SECONDS] | unreclaim NAME — the
// gateway fleet as the control plane sees it (docs/gateway-control-plane.md § Admin endpoints): which
// workers are in view and what they hold, which worker owns each gateway-pool proxy and what it could
// still carry, and reclaims (a pool proxy taken out for an exclusive lease: its owner drains it first).
import { exactlyOne, none, outputOf, positiveInt } from '../args.js';
import type { Ctx } from '../context.js';
import { BadResponseError, InputError } from '../errors.js';
import { age, json, table, yaml } from '../output.js';
import { proxyNameArg } from './proxies.js';

export interface GatewayWorkerJson {
  workerId: string;
  zone: string;
  live: boolean;
  validUntil: string;
  ackedVersion: number | null;
  reportAgeSeconds: number | null;
  draining: boolean;
  owned: number;
  snapshot: { version: number; proxies: number; drainingAway: number } | null;
}

export interface WorkerListJson {
  epoch: number;
  validAfter: string | null;
  nextPageToken?: string | null;
  workers: GatewayWorkerJson[];
}

export interface OwnershipJson {
  epoch: number;
  proxies: Array<{
    proxy: string;
    owner: string | null;
    drainEpoch: number | null;
    capacity: number;
    active: number | null;
    reserved: number | null;
    usable: number;
    reason: string | null;
  }>;
}

export const workersOptions = { all: { type: 'boolean' } } as const;
export const reclaimOptions = { ttl: { type: 'string' } } as const;

/** The API's bounds of a reclaim (ReclaimBody): a minute to a week. */
export const RECLAIM_TTL = { min: 60, max: 7 * 86_400, default: 3600 };
const ALL_PAGE_SIZE = 500;

const dash = (v: number | null | undefined) => (v === null || v === undefined ? '-' : String(v));

export function workersTable(list: WorkerListJson, now: Date): string {
  const rows = list.workers.map((w) => [
    w.workerId,
    w.zone,
    w.draining ? 'shutting-down' : w.live ? 'live' : `lapsed ${age(w.validUntil, now)} ago`,
    String(w.owned),
    w.snapshot ? `v${w.snapshot.version} (${w.snapshot.proxies} proxies)` : '-',
    dash(w.ackedVersion),
    w.snapshot?.drainingAway ? String(w.snapshot.drainingAway) : '-',
    w.reportAgeSeconds === null ? '-' : `${w.reportAgeSeconds}s ago`,
  ]);
  return `ownership epoch ${list.epoch}\n${table(
    ['WORKER', 'ZONE', 'STATE', 'OWNS', 'SNAPSHOT', 'ACKED', 'DRAINING', 'REPORT'],
    rows,
  )}`;
}

export async function listWorkers({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  let list: WorkerListJson;
  if (args.values.all) {
    // Every stored worker document, a page at a time, in worker-id order.
    const workers: GatewayWorkerJson[] = [];
    let page: WorkerListJson;
    let token: string | null | undefined;
    const sent = new Set<string>();
    do {
      const query = new URLSearchParams({ all: 'true', pageSize: String(ALL_PAGE_SIZE) });
      if (token) {
        query.set('pageToken', token);
        sent.add(token);
      }
      page = await api.call<WorkerListJson>('GET', '/v1/gateway/workers', { role: 'admin', query });
      workers.push(...page.workers);
      // The token names the last worker read, so it advances with every page: one already sent (the same
      // token again, or A → B → A) would never end, collecting pages.
      if (page.nextPageToken && sent.has(page.nextPageToken)) {
        throw new BadResponseError(
          'GET /v1/gateway/workers answered a page token it was already sent as the next one',
        );
      }
      token = page.nextPageToken;
    } while (token);
    list = { epoch: page.epoch, validAfter: null, workers };
  } else {
    list = await api.call<WorkerListJson>('GET', '/v1/gateway/workers', { role: 'admin' });
  }
  if (output === 'json') return io.out(json(list));
  if (output === 'yaml') return io.out(yaml(list));
  io.out(
    list.workers.length === 0
      ? `ownership epoch ${list.epoch}\nNo gateway workers.`
      : workersTable(list, io.now()),
  );
}

export function ownershipTable(o: OwnershipJson): string {
  const rows = o.proxies.map((p) => [
    p.proxy,
    p.owner ?? '-',
    p.drainEpoch === null ? '-' : `since epoch ${p.drainEpoch}`,
    dash(p.active),
    dash(p.reserved),
    String(p.capacity),
    String(p.usable),
    p.reason ?? '-',
  ]);
  return `ownership epoch ${o.epoch}\n${table(
    ['PROXY', 'OWNER', 'DRAINING', 'ACTIVE', 'RESERVED', 'CAPACITY', 'USABLE', 'WHY NOT USABLE'],
    rows,
  )}`;
}

export async function showOwnership({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const o = await api.call<OwnershipJson>('GET', '/v1/gateway/ownership', { role: 'admin' });
  if (output === 'json') return io.out(json(o));
  if (output === 'yaml') return io.out(yaml(o));
  io.out(o.proxies.length === 0 ? `ownership epoch ${o.epoch}\nNo gateway-pool proxies.` : ownershipTable(o));
}

export async function reclaimProxy({ api, io, args }: Ctx): Promise<void> {
  const name = proxyNameArg(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const ttl = positiveInt(
    args.values.ttl as string | undefined,
    '--ttl',
    RECLAIM_TTL.default,
    RECLAIM_TTL.max,
  );
  if (ttl < RECLAIM_TTL.min) {
    throw new InputError(`--ttl must be from ${RECLAIM_TTL.min} to ${RECLAIM_TTL.max} seconds, got ${ttl}`);
  }
  const r = await api.call<{ proxy: string; until: string }>(
    'POST',
    `/v1/gateway/reclaims/${encodeURIComponent(name)}`,
    { role: 'admin', body: { ttlSeconds: ttl } },
  );
  if (output === 'json') return io.out(json(r));
  if (output === 'yaml') return io.out(yaml(r));
  const until = `proxy ${r.proxy} reclaimed until ${r.until} (in ${age(r.until, io.now())})`;
  const early = `(\`gateway unreclaim ${r.proxy}\` ends it early)`;
  // The API takes a reclaim of any proxy; one outside the pool has no owner to drain it, and saying so
  // tells a mistyped name from a pre-emptive reclaim.
  if ((await inGatewayPool(api, r.proxy)) === false) {
    return io.out(
      `${until}: it is not in the gateway pool (spec.gatewayPool is false), so nothing drains; should it join before then, it stays out until the reclaim ends ${early}`,
    );
  }
  io.out(`${until}: its gateway owner drains it, then it stays out of the gateway pool until then ${early}`);
}

/** The proxy's spec.gatewayPool, or null when it cannot be read (the message then stays the general one). */
async function inGatewayPool(api: Ctx['api'], name: string): Promise<boolean | null> {
  try {
    const p = await api.call<{ spec?: { gatewayPool?: unknown } }>(
      'GET',
      `/v1/proxies/${encodeURIComponent(name)}`,
      { role: 'admin' },
    );
    return typeof p?.spec?.gatewayPool === 'boolean' ? p.spec.gatewayPool : null;
  } catch {
    return null;
  }
}

export async function unreclaimProxy({ api, io, args }: Ctx): Promise<void> {
  const name = exactlyOne(args.positionals, 'proxy NAME');
  proxyNameArg([name]);
  outputOf(args.values, ['table']);
  await api.call('DELETE', `/v1/gateway/reclaims/${encodeURIComponent(name)}`, {
    role: 'admin',
    noContent: true,
  });
  io.out(
    `proxy ${name}: no reclaim stands; it rejoins the gateway pool with the next snapshot pass if its spec puts it there`,
  );
}
