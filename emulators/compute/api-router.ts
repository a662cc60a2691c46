// Maps the REST paths @google-cloud/compute sends (REST fallback; recipes §3) to the operations the
// emulator implements. A known path with a wrong method is 405, an unknown path 404, both in GCE's
// error shape.
import type { ApiOperation } from './faults.js';

interface Route {
  pattern: RegExp;
  methods: Partial<Record<string, ApiOperation>>;
}

const SEG = '([^/]+)';
const PREFIX = `^/compute/v1/projects/${SEG}`;

const ROUTES: Route[] = [
  { pattern: new RegExp(`${PREFIX}/zones/${SEG}/instances$`), methods: { GET: 'list', POST: 'insert' } },
  {
    pattern: new RegExp(`${PREFIX}/zones/${SEG}/instances/${SEG}$`),
    methods: { GET: 'get', DELETE: 'delete' },
  },
  { pattern: new RegExp(`${PREFIX}/zones/${SEG}/instances/${SEG}/stop$`), methods: { POST: 'stop' } },
  { pattern: new RegExp(`${PREFIX}/zones/${SEG}/instances/${SEG}/start$`), methods: { POST: 'start' } },
  { pattern: new RegExp(`${PREFIX}/aggregated/instances$`), methods: { GET: 'aggregatedList' } },
  { pattern: new RegExp(`${PREFIX}/zones/${SEG}/operations$`), methods: { GET: 'operationsList' } },
  { pattern: new RegExp(`${PREFIX}/zones/${SEG}/operations/${SEG}$`), methods: { GET: 'operationsGet' } },
  {
    pattern: new RegExp(`${PREFIX}/zones/${SEG}/operations/${SEG}/wait$`),
    methods: { POST: 'operationsWait' },
  },
];

export type RouteMatch =
  | { kind: 'ok'; operation: ApiOperation; params: string[] }
  | { kind: 'method'; allowed: string[] }
  | { kind: 'none' };

export function matchApiRoute(method: string, pathname: string): RouteMatch {
  for (const route of ROUTES) {
    const m = route.pattern.exec(pathname);
    if (!m) continue;
    const operation = route.methods[method];
    if (!operation) return { kind: 'method', allowed: Object.keys(route.methods) };
    const params: string[] = [];
    for (const raw of m.slice(1)) {
      try {
        params.push(decodeURIComponent(raw));
      } catch {
        return { kind: 'none' };
      }
    }
    return { kind: 'ok', operation, params };
  }
  return { kind: 'none' };
}
