// The fleet page's two JSON routes as OpenAPI route definitions (createRoute): GET /fleet/api/state (also
// what `proxyplane fleet watch` reads) and GET /fleet/api/proxies/{name}, with the answers the page's own
// auth gives (auth.ts) and the credential it takes: an admin Bearer token, or the page's cookie. The
// HTML, the assets, the login form and the event stream stay out of /openapi.json (not JSON).
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { refusesBody } from '../routes/openapi-no-body.js';
import { error, json } from '../routes/openapi-responses.js';
import { COOKIE } from './auth.js';
import { FleetView, ProxyDetail } from './fleet-schemas.js';
import { BUILD_COST_FACTOR, FLEET_DEBOUNCE_MS } from './shared-view.js';

/** An admin credential as a Bearer header (the CLI), or the page's cookie holding one (a browser). */
export const fleetSecurity: Array<Record<string, string[]>> = [{ admin: [] }, { fleetCookie: [] }];

/** The cookie as a security scheme: registered by the fleet app, so only where the page is mounted. */
export function registerFleetSecurity(registry: OpenAPIHono['openAPIRegistry']): void {
  registry.registerComponent('securitySchemes', 'fleetCookie', {
    type: 'apiKey',
    in: 'cookie',
    name: COOKIE,
    description:
      "The fleet page's HttpOnly cookie (Path=/fleet, SameSite=Strict), holding an admin credential: set by POST /fleet/login (or, where allowed, a `?token=` on a GET). An Authorization header, when present, is checked instead of it; a cookie that is refused (401, 403) is cleared, one that cannot be checked right now (503) is kept.",
  });
}

const tags = ['fleet'];

/** What the fleet's auth (auth.ts) answers before a route runs; JSON unless the caller accepts text/html. */
const refusals = {
  401: error(
    'unauthenticated: no credential, or one that is not accepted (`WWW-Authenticate: Bearer realm="proxyplane"`). With `Accept: text/html`: the login form (HTML) instead',
  ),
  403: error(
    'forbidden: a valid credential that is not an admin one — a crawler token, a Google identity not on the list (`WWW-Authenticate` with `error="insufficient_scope"`). With `Accept: text/html`: the login form (HTML) with the reason',
  ),
  503: error(
    'unavailable: the credential cannot be checked right now, or the fleet view is not loaded yet (Firestore out of reach; then `Retry-After: 2`)',
  ),
};

const noStore = {
  'Cache-Control': {
    description: '`no-store`: a view of the moment',
    schema: { type: 'string' as const, example: 'no-store' },
  },
};

const SIGN_IN =
  " A `?token=` on the address is the page's browser sign-in (docs/cli.md § The fleet page), answered with a redirect and the cookie, with the login form (HTML) or, to a caller that does not accept text/html, an error: 400 invalid_request where a token in the address is refused (Cloud Run), 403 forbidden for one a browser says came from another site, and for a token that is checked and refused the same error as for that token in an Authorization header (401, 403, 503 below) — never with this body.";

export const fleetStateRoute = createRoute({
  method: 'get',
  path: '/api/state',
  tags,
  summary: "The fleet page's view: a row per proxy, the phase counts, the jobs' last runs",
  description: `What the page renders and \`proxyplane fleet watch\` reads; the \`fleet\` event of GET /fleet/events carries the same object.${SIGN_IN}`,
  security: fleetSecurity,
  responses: {
    200: {
      ...json(
        FleetView,
        `The fleet's view, shared with the page's streams: built for this request or reused, so up to one rebuild gap old (${FLEET_DEBOUNCE_MS} ms, or ${BUILD_COST_FACTOR} times what the last build cost on a large fleet)`,
      ),
      headers: noStore,
    },
    ...refusesBody(),
    ...refusals,
  },
});

export const FleetProxyParam = z.object({
  name: z.string().openapi({
    param: { name: 'name', in: 'path' },
    description: 'A proxy name: anything that names no proxy is 404, never 400',
    example: 'us-east-1',
  }),
});

export const fleetProxyRoute = createRoute({
  method: 'get',
  path: '/api/proxies/{name}',
  tags,
  summary: "A proxy's detail: its row, spec, status, health, active leases and recent events",
  description: `What the page's detail drawer renders.${SIGN_IN}`,
  security: fleetSecurity,
  request: { params: FleetProxyParam },
  responses: {
    200: { ...json(ProxyDetail, 'The proxy now'), headers: noStore },
    ...refusesBody(),
    404: error('not_found: no proxy of that name'),
    ...refusals,
  },
});
