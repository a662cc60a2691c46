// GET /fleet/api/state and GET /fleet/api/proxies/{name} answer what /openapi.json says they do: their real
// answers on a populated fleet (every phase, leases, cooldowns, gateway owners, job runs) fit the response
// schemas the routes are registered with, with no field the schemas leave out; and the document names
// those schemas and the credential the page takes.
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { harness } from '../testing/harness.js';
import { COOKIE } from './auth.js';
import { fleetProxyRoute, fleetStateRoute } from './fleet-openapi.js';
import { populatedFleet } from './testing/fleet-fixtures.js';

type Responses = Record<number, { content?: Record<string, { schema: z.ZodType }> }>;
/** The schema a route is registered with for the JSON answer of `status`. */
const schemaOf = (route: { responses: object }, status: number) =>
  (route.responses as Responses)[status]?.content?.['application/json']?.schema as z.ZodType;

/** Fits the schema, and nothing is dropped by it (zod drops keys an object schema does not name). */
function expectFits(schema: z.ZodType, body: unknown) {
  const parsed = schema.safeParse(body);
  expect(parsed.error?.issues).toBeUndefined();
  expect(parsed.data).toEqual(body);
}

describe('the fleet JSON routes answer their registered schemas', () => {
  it('GET /fleet/api/state, on a fleet with a proxy in every phase', async () => {
    const h = harness({ fleet: populatedFleet() });
    const res = await h.call('GET', '/fleet/api/state');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { rows: Array<{ phase: string; owner: unknown }> };
    expect(new Set(body.rows.map((r) => r.phase))).toEqual(
      new Set(['Ready', 'Unhealthy', 'Pending', 'Provisioning', 'Deleting', 'Failed']),
    );
    expect(body.rows.filter((r) => r.owner !== null)).toHaveLength(2);
    expectFits(schemaOf(fleetStateRoute, 200), body);
  });

  it('GET /fleet/api/proxies/{name}, for each proxy', async () => {
    const feed = populatedFleet();
    const h = harness({ fleet: feed });
    expect(feed.proxies.size).toBe(7);
    for (const name of feed.proxies.keys()) {
      const res = await h.call('GET', `/fleet/api/proxies/${name}`);
      expect(res.status, name).toBe(200);
      expectFits(schemaOf(fleetProxyRoute, 200), await res.json());
    }
  });

  it('their refusals: 404 for an unknown proxy, 401 without a credential, the stable Error body', async () => {
    const h = harness({ fleet: populatedFleet() });
    const unknown = await h.call('GET', '/fleet/api/proxies/nope');
    expect(unknown.status).toBe(404);
    expectFits(schemaOf(fleetProxyRoute, 404), await unknown.json());
    for (const [route, path] of [
      [fleetStateRoute, '/fleet/api/state'],
      [fleetProxyRoute, '/fleet/api/proxies/a'],
    ] as const) {
      const res = await h.app.request(path);
      expect(res.status, path).toBe(401);
      expectFits(schemaOf(route, 401), await res.json());
    }
  });

  it('the schemas are not open: a row without its phase, or with a field they do not name, does not fit', async () => {
    const h = harness({ fleet: populatedFleet() });
    const body = (await (await h.call('GET', '/fleet/api/state')).json()) as {
      rows: Array<Record<string, unknown>>;
    };
    const schema = schemaOf(fleetStateRoute, 200);
    const [first, ...rest] = body.rows;
    const { phase: _phase, ...noPhase } = first ?? {};
    expect(schema.safeParse({ ...body, rows: [noPhase, ...rest] }).success).toBe(false);
    // A field the schema does not name is dropped by it, which expectFits tells from the answer.
    const extra = { ...body, rows: [{ ...first, extra: 1 }, ...rest] };
    expect(schema.parse(extra)).not.toEqual(extra);
  });
});

describe('/openapi.json describes the fleet JSON routes', () => {
  async function operation(path: string) {
    const doc = (await (await harness({ fleet: populatedFleet() }).call('GET', '/openapi.json')).json()) as {
      paths: Record<string, { get: Record<string, unknown> }>;
      components: { securitySchemes: Record<string, unknown> };
    };
    return { op: doc.paths[path]?.get as Record<string, unknown>, schemes: doc.components.securitySchemes };
  }

  it.each([
    ['/fleet/api/state', 'FleetState', ['200', '400', '401', '403', '413', '503']],
    ['/fleet/api/proxies/{name}', 'FleetProxyDetail', ['200', '400', '401', '403', '404', '413', '503']],
  ])('%s: answers %s, no-store, and the refusals of the page’s auth', async (path, schema, statuses) => {
    const { op } = await operation(path);
    const responses = op.responses as Record<
      string,
      { content: Record<string, { schema: { $ref: string } }>; headers?: Record<string, unknown> }
    >;
    expect(Object.keys(responses).sort()).toEqual(statuses);
    expect(responses['200']?.content['application/json']?.schema.$ref).toBe(`#/components/schemas/${schema}`);
    expect(responses['200']?.headers?.['Cache-Control']).toBeDefined();
    expect(responses['401']?.content['application/json']?.schema.$ref).toBe('#/components/schemas/Error');
  });

  it('takes an admin Bearer credential or the page’s cookie', async () => {
    const { op, schemes } = await operation('/fleet/api/state');
    expect(op.security).toEqual([{ admin: [] }, { fleetCookie: [] }]);
    expect(schemes.fleetCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: COOKIE });
  });
});
