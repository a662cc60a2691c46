// instances.list (one zone) and instances.aggregatedList (every zone, keyed "zones/<zone>"), with
// filter, maxResults/pageToken, orderBy (name | creationTimestamp desc) and returnPartialSuccess.
// aggregatedList lists every zone on each page, empty ones with the NO_RESULTS_ON_PAGE warning, as
// GCE does; a zone made unreachable by a fault goes to `unreachables` when partial success is
// allowed, otherwise it carries an UNREACHABLE warning.
import { invalidField } from './errors.js';
import { type FilterNode, FilterSyntaxError, parseFilter } from './filter.js';
import { matchesFilter } from './filter-match.js';
import { INSTANCE_FIELDS, type InstanceRecord, toInstanceResource } from './instance.js';
import { link, projectPath, zonePath } from './links.js';
import { decodePageToken, pageScope, parseMaxResults, takePage } from './paging.js';
import { checkProject, checkZone } from './scope.js';
import type { EmulatorState } from './state.js';

interface Listing {
  filter: FilterNode | null;
  max: number;
  after: string | null;
  scope: string;
  orderKey: (r: InstanceRecord) => string;
}

const TIME_CEILING = 1e15;

function parseListing(query: URLSearchParams, kind: string, project: string, zone: string | null): Listing {
  const filterText = query.get('filter');
  let filter: FilterNode | null = null;
  if (filterText) {
    try {
      filter = parseFilter(filterText, INSTANCE_FIELDS);
    } catch (err) {
      if (!(err instanceof FilterSyntaxError)) throw err;
      throw invalidField('filter', filterText, 'Invalid list filter expression.');
    }
  }
  const orderBy = query.get('orderBy');
  refuseFilterWithOrder(filterText, orderBy);
  let orderKey: Listing['orderKey'];
  if (orderBy === null || orderBy === '' || orderBy === 'name') orderKey = (r) => r.spec.name;
  else if (/^creationTimestamp desc$/.test(orderBy)) {
    orderKey = (r) => `${String(TIME_CEILING - r.createdAt.getTime()).padStart(16, '0')}/${r.spec.name}`;
  } else throw invalidField('orderBy', orderBy, "Only 'name' and 'creationTimestamp desc' are supported.");
  const scope = pageScope(kind, project, zone, filterText, orderBy);
  return {
    filter,
    orderKey,
    scope,
    max: parseMaxResults(query.get('maxResults')),
    after: decodePageToken(query.get('pageToken'), scope),
  };
}

function matching(records: Iterable<InstanceRecord>, listing: Listing) {
  const out: Array<{ record: InstanceRecord; resource: Record<string, unknown> }> = [];
  for (const record of records) {
    const resource = toInstanceResource(record);
    if (matchesFilter(listing.filter, resource)) out.push({ record, resource });
  }
  return out;
}

export function listInstances(state: EmulatorState, project: string, zone: string, query: URLSearchParams) {
  checkZone(state, project, zone);
  const listing = parseListing(query, 'list', project, zone);
  const inZone = [...state.instances.values()].filter((r) => r.project === project && r.zone === zone);
  const rows = matching(inZone, listing);
  const key = (row: (typeof rows)[number]) => listing.orderKey(row.record);
  rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const { page, nextPageToken } = takePage(rows, key, listing.after, listing.max, listing.scope);
  const path = `${zonePath(project, zone)}/instances`;
  return {
    kind: 'compute#instanceList',
    id: path,
    ...(page.length > 0 ? { items: page.map((row) => row.resource) } : {}),
    ...(nextPageToken ? { nextPageToken } : {}),
    selfLink: link(path),
  };
}

export function aggregatedListInstances(state: EmulatorState, project: string, query: URLSearchParams) {
  checkProject(state, project);
  const listing = parseListing(query, 'aggregated', project, null);
  const partial = query.get('returnPartialSuccess') === 'true';
  const zoneIndex = new Map(state.zones.map((z, i) => [z, String(i).padStart(4, '0')]));
  const reachable = (zone: string) => !state.faults.unreachableZones.has(zone);
  const candidates = [...state.instances.values()].filter((r) => r.project === project && reachable(r.zone));
  const rows = matching(candidates, listing);
  const key = (row: (typeof rows)[number]) =>
    `${zoneIndex.get(row.record.zone)}/${listing.orderKey(row.record)}`;
  rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const { page, nextPageToken } = takePage(rows, key, listing.after, listing.max, listing.scope);

  const byZone = new Map<string, Record<string, unknown>[]>();
  for (const row of page) {
    const list = byZone.get(row.record.zone) ?? [];
    list.push(row.resource);
    byZone.set(row.record.zone, list);
  }
  const items: Record<string, unknown> = {};
  const unreachables: string[] = [];
  for (const zone of state.zones) {
    const scopeName = `zones/${zone}`;
    if (!reachable(zone)) {
      if (partial) unreachables.push(scopeName);
      else
        items[scopeName] = {
          warning: warning(
            'UNREACHABLE',
            `The resource '${zonePath(project, zone)}' is currently unreachable.`,
            scopeName,
          ),
        };
      continue;
    }
    const instances = byZone.get(zone);
    items[scopeName] = instances
      ? { instances }
      : {
          warning: warning(
            'NO_RESULTS_ON_PAGE',
            `There are no results for scope '${scopeName}' on this page.`,
            scopeName,
          ),
        };
  }
  const path = `${projectPath(project)}/aggregated/instances`;
  return {
    kind: 'compute#instanceAggregatedList',
    id: path,
    items,
    ...(nextPageToken ? { nextPageToken } : {}),
    selfLink: link(path),
    ...(unreachables.length > 0 ? { unreachables } : {}),
  };
}

function warning(code: string, message: string, scopeName: string) {
  return { code, message, data: [{ key: 'scope', value: scopeName }] };
}

/**
 * GCE's list methods refuse a sort order beside a filter (400 invalid: "Specifying both a list filter and
 * sort order is not currently supported."), which a caller must page instead: accepted here, a provider
 * asking for both passed offline and read nothing deployed.
 */
export function refuseFilterWithOrder(filter: string | null, orderBy: string | null): void {
  if (filter && orderBy)
    throw invalidField(
      'orderBy',
      orderBy,
      'Specifying both a list filter and sort order is not currently supported.',
    );
}
