// zoneOperations.get, .list and .wait. `wait` blocks until the operation is DONE or about two minutes
// have passed (then returns it unfinished, as GCE does), and stops waiting when the caller goes away.
// `list` takes the same filter / maxResults / pageToken / orderBy as instances.list; the provider
// finds an insert that failed after it was accepted (async quota, stockout) through it.
// https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/list
import { invalidField, notFound } from './errors.js';
import { type FilterNode, FilterSyntaxError, parseFilter } from './filter.js';
import { matchesFilter } from './filter-match.js';
import { link, operationPath, zonePath } from './links.js';
import { refuseFilterWithOrder } from './listing.js';
import { OPERATION_FIELDS, type OperationRecord, toOperationResource } from './operations.js';
import { decodePageToken, pageScope, parseMaxResults, takePage } from './paging.js';
import { checkZone } from './scope.js';
import type { EmulatorState } from './state.js';

function findOperation(state: EmulatorState, project: string, zone: string, name: string): OperationRecord {
  checkZone(state, project, zone);
  const op = state.ops.get(project, zone, name);
  if (!op) throw notFound(operationPath(project, zone, name));
  return op;
}

export function getOperation(state: EmulatorState, project: string, zone: string, name: string) {
  return toOperationResource(findOperation(state, project, zone, name));
}

const TIME_CEILING = 1e15;

/** Sort keys (unique, ascending) for the orders GCE accepts: name, or newest first. */
function orderKey(orderBy: string | null): (op: OperationRecord) => string {
  if (orderBy === null || orderBy === '' || orderBy === 'name') return (op) => op.name;
  if (orderBy === 'creationTimestamp desc')
    return (op) => `${String(TIME_CEILING - op.insertTime.getTime()).padStart(16, '0')}/${op.name}`;
  throw invalidField('orderBy', orderBy, "Only 'name' and 'creationTimestamp desc' are supported.");
}

function filterOf(text: string | null): FilterNode | null {
  if (!text) return null;
  try {
    return parseFilter(text, OPERATION_FIELDS);
  } catch (err) {
    if (!(err instanceof FilterSyntaxError)) throw err;
    throw invalidField('filter', text, 'Invalid list filter expression.');
  }
}

export function listOperations(state: EmulatorState, project: string, zone: string, query: URLSearchParams) {
  checkZone(state, project, zone);
  const filterText = query.get('filter');
  const orderBy = query.get('orderBy');
  refuseFilterWithOrder(filterText, orderBy);
  const filter = filterOf(filterText);
  const keyOf = orderKey(orderBy);
  const scope = pageScope('operations', project, zone, filterText, orderBy);
  const max = parseMaxResults(query.get('maxResults'));
  const after = decodePageToken(query.get('pageToken'), scope);
  const rows = state.ops
    .inZone(project, zone)
    .map((op) => ({ key: keyOf(op), resource: toOperationResource(op) }))
    .filter((row) => matchesFilter(filter, row.resource))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const { page, nextPageToken } = takePage(rows, (row) => row.key, after, max, scope);
  const path = `${zonePath(project, zone)}/operations`;
  return {
    kind: 'compute#operationList',
    id: path,
    ...(page.length > 0 ? { items: page.map((row) => row.resource) } : {}),
    ...(nextPageToken ? { nextPageToken } : {}),
    selfLink: link(path),
  };
}

export async function waitOperation(
  state: EmulatorState,
  project: string,
  zone: string,
  name: string,
  signal: AbortSignal,
) {
  const op = findOperation(state, project, zone, name);
  await state.ops.wait(op, state.waitTimeoutMs, signal);
  return toOperationResource(op);
}
