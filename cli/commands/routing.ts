// proxyplane routing get | apply -f FILE — the gateways' ordered routes (docs/gateway-control-plane.md
// § Admin endpoints), as `proxies get`/`apply` do for a proxy:
//   get -o yaml > routing.yaml; edit; apply -f routing.yaml
// The routing has a revision, bumped by every write that changes it (its ETag). apply reads the stored routing, writes
// nothing when the file's routes are the stored ones, and otherwise PUTs them with `If-Match` of the
// revision it read, so an edit made by someone else in between is never overwritten unseen: on 412 it
// reads again and retries, APPLY_ATTEMPTS times at most. A file saved by `get` carries its revision: it
// applies only over that revision (the PUT's If-Match is the file's), refused otherwise before anything is
// written — the edit was made to a routing that has changed since.
import { isDeepStrictEqual } from 'node:util';
import { type RoutingRule, RoutingRules } from '../../shared/src/messages/gateway-snapshot.js';
import { none, outputOf } from '../args.js';
import type { Ctx } from '../context.js';
import { ApiCallError, StaleFileError, UsageError } from '../errors.js';
import { age, attrs, json, table, yaml } from '../output.js';
import { readRoutingFile } from '../routing-file.js';

export interface RoutingJson {
  routes: RoutingRule[];
  updatedAt: string | null;
  updatedBy: string | null;
  default: boolean;
  droppedDuplicates?: string[];
  revision: number;
}

export const routingApplyOptions = { file: { type: 'string', short: 'f' } } as const;

/** Reads and writes before apply gives up (others keep changing the routing). */
export const APPLY_ATTEMPTS = 5;

const PATH = '/v1/gateway/routing';
const MAX_HOSTS_SHOWN = 3;

function policyOf(r: RoutingRule): string {
  if (r.policy !== 'sticky' || !r.stickyKey) return r.policy;
  return 'header' in r.stickyKey ? `sticky (header ${r.stickyKey.header})` : 'sticky (client credentials)';
}

function hostsOf(r: RoutingRule): string {
  const h = r.match.hosts;
  return h.length <= MAX_HOSTS_SHOWN
    ? h.join(',')
    : `${h.slice(0, MAX_HOSTS_SHOWN).join(',')},… (${h.length})`;
}

export function routingTable(r: RoutingJson, now: Date): string {
  const head = r.default
    ? `the built-in default (no routing stored; revision ${r.revision})`
    : `revision ${r.revision}, written by ${r.updatedBy ?? '-'} ${age(r.updatedAt, now)} ago`;
  const rows = r.routes.map((route, i) => [
    String(i + 1),
    route.name,
    hostsOf(route),
    attrs(route.selector),
    policyOf(route),
    route.targetCheck ? `${route.targetCheck.url} → ${route.targetCheck.expectedStatus}` : '-',
  ]);
  const dropped = r.droppedDuplicates?.length
    ? `\nwarning: the stored routing repeats route names; these later routes are dropped from every snapshot: ${r.droppedDuplicates.join(', ')} (apply a fixed routing)`
    : '';
  return `${head}\n${table(['#', 'NAME', 'HOSTS', 'SELECTOR', 'POLICY', 'TARGET CHECK'], rows)}${dropped}`;
}

export async function getRouting({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const r = await api.call<RoutingJson>('GET', PATH, { role: 'admin' });
  if (output === 'json') return io.out(json(r));
  if (output === 'yaml') return io.out(yaml(r));
  io.out(routingTable(r, io.now()));
}

/** What a write changes, by route name: for the line apply prints. */
export function routingChanges(before: RoutingRule[], after: RoutingRule[]): string {
  const was = new Map(before.map((r) => [r.name, r]));
  const is = new Map(after.map((r) => [r.name, r]));
  const added = after.filter((r) => !was.has(r.name)).map((r) => r.name);
  const removed = before.filter((r) => !is.has(r.name)).map((r) => r.name);
  const changed = after
    .filter((r) => was.has(r.name) && !isDeepStrictEqual(was.get(r.name), r))
    .map((r) => r.name);
  const parts = [
    added.length ? `added ${added.join(', ')}` : '',
    removed.length ? `removed ${removed.join(', ')}` : '',
    changed.length ? `changed ${changed.join(', ')}` : '',
  ].filter(Boolean);
  const kept = (names: RoutingRule[]) =>
    names.filter((r) => was.has(r.name) && is.has(r.name)).map((r) => r.name);
  // Routes match in order, so an order change is a change of its own.
  if (!isDeepStrictEqual(kept(before), kept(after))) parts.push('reordered');
  return parts.join('; ');
}

/**
 * The stored routes in the form a file's are parsed into (defaults filled in), to compare the two; null when
 * this CLI's schema cannot read them (an API of a newer release, a field this CLI does not know): then they
 * are not the file's, and the PUT decides.
 */
function normalized(routes: RoutingRule[]): RoutingRule[] | null {
  const parsed = RoutingRules.safeParse(routes);
  return parsed.success ? parsed.data : null;
}

/**
 * The stored routing, or — when the API says the stored document no longer fits the route schema (edited
 * by hand) — an empty one at the revision it reports, flagged, so that apply replaces it (a conditional PUT
 * is how such a document is fixed) and never calls it unchanged.
 */
async function readStored(api: Ctx['api']): Promise<RoutingJson & { invalid?: true }> {
  try {
    return await api.call<RoutingJson>('GET', PATH, { role: 'admin' });
  } catch (err) {
    const revision =
      err instanceof ApiCallError && err.code === 'stored_routing_invalid'
        ? (err.body as { revision?: unknown } | null)?.revision
        : undefined;
    if (typeof revision !== 'number') throw err;
    return { routes: [], updatedAt: null, updatedBy: null, default: false, revision, invalid: true };
  }
}

const isPreconditionFailed = (err: unknown) =>
  err instanceof ApiCallError && err.status === 412 && err.code === 'precondition_failed';

export async function applyRouting({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const file = args.values.file as string | undefined;
  if (file === undefined) throw new UsageError('routing apply needs -f FILE (- reads stdin)');
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const wanted = await readRoutingFile(io, file);
  const source = file === '-' ? 'stdin' : file;
  for (let attempt = 1; ; attempt++) {
    const current = await readStored(api);
    const stored = normalized(current.routes);
    const same = stored !== null && isDeepStrictEqual(stored, wanted.routes);
    // Before the revision check: a saved file applied again (its first apply's answer lost, or answered
    // 503 after it landed and then 412 on the retry) finds the routing it holds, whatever the revision.
    if (!current.invalid && same && !current.droppedDuplicates?.length) {
      if (output !== 'table') return io.out(output === 'json' ? json(current) : yaml(current));
      return io.out(`routing unchanged (revision ${current.revision}, ${routeCount(current.routes.length)})`);
    }
    if (wanted.revision !== undefined && wanted.revision !== current.revision)
      throw stale(source, wanted.revision, current);
    const ifMatch = `"${wanted.revision ?? current.revision}"`;
    let written: { routes: RoutingRule[]; revision: number };
    try {
      written = await api.call('PUT', PATH, {
        role: 'admin',
        body: { routes: wanted.routes },
        headers: { 'if-match': ifMatch },
      });
    } catch (err) {
      // Changed between our read and our write: read again — the routing the file holds (unchanged), a
      // saved file gone stale, or a retry.
      if (!isPreconditionFailed(err) || attempt >= APPLY_ATTEMPTS) throw err;
      continue;
    }
    if (output !== 'table') return io.out(output === 'json' ? json(written) : yaml(written));
    const what = current.invalid
      ? 'replaced a stored routing that did not fit the route schema'
      : routingChanges(stored ?? current.routes, wanted.routes) || 'rewritten';
    return io.out(
      `routing configured: revision ${current.revision} → ${written.revision}, ${routeCount(written.routes.length)} (${what}); the gateways get it with the next snapshot`,
    );
  }
}

const routeCount = (n: number) => (n === 1 ? '1 route' : `${n} routes`);

function stale(source: string, saved: number, current: RoutingJson): StaleFileError {
  const by = current.default
    ? 'none stored now'
    : `written by ${current.updatedBy ?? '-'} at ${current.updatedAt ?? '-'}`;
  return new StaleFileError(
    `${source} was saved at routing revision ${saved}, and the routing is now at revision ${current.revision} (${by}); nothing was written — \`routing get -o yaml\` it again and redo the edit, or delete \`revision\` from the file to apply it over the stored routing`,
  );
}
