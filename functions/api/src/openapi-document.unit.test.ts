import { describe, expect, it } from 'vitest';
import { everySurface, harness } from './testing/harness.js';

/** Routes served but not in the document, each with why. A new route must be documented or listed here. */
const EXCLUDED: Record<string, string> = {
  'GET /openapi.json': 'the document itself',
  'GET /metrics': 'Prometheus text exposition for the scraper, not JSON',
  // The fleet page (docs/cli.md § The fleet page) for a browser: its HTML, its assets, its login form
  // posts, and its server-sent event stream — none of them JSON, so none an OpenAPI client could call. Its
  // two JSON routes, GET /fleet/api/state (what `proxyplane fleet watch` reads) and GET
  // /fleet/api/proxies/{name}, are clients' API and are in the document (fleet/fleet-openapi.ts).
  'GET /fleet': 'HTML page',
  'GET /fleet/assets/fleet.js': 'page asset',
  'GET /fleet/assets/fleet.css': 'page asset',
  'GET /fleet/login': 'HTML login form',
  'POST /fleet/login': 'HTML form post (application/x-www-form-urlencoded), sets the page cookie',
  'POST /fleet/logout': 'HTML form post, clears the page cookie',
  'GET /fleet/proxies/{name}': 'HTML page',
  'GET /fleet/events': 'text/event-stream of the fleet page’s view model',
};

/**
 * Routes documented under other paths: Hono cannot spell a parameter followed by a literal in one
 * segment, so the jobs' custom methods (`/v1/jobs/gc-sweep:run`) are one route that splits the segment
 * (jobs/job-routes.ts), documented as the three methods it serves.
 */
const DOCUMENTED_AS: Record<string, string[]> = {
  'POST /v1/jobs/{call}': [
    'POST /v1/jobs/{name}:run',
    'POST /v1/jobs/{name}:pause',
    'POST /v1/jobs/{name}:resume',
  ],
};

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
}
interface Operation {
  parameters?: Parameter[];
  responses: Record<string, unknown>;
  security?: Array<Record<string, string[]>>;
}
interface Document {
  openapi: string;
  info: { title: string; version: string };
  security?: Array<Record<string, string[]>>;
  paths: Record<string, Record<string, Operation> & { parameters?: Parameter[] }>;
  components: { securitySchemes?: Record<string, unknown> };
}

async function documentOf(h: ReturnType<typeof harness>): Promise<Document> {
  const res = await h.call('GET', '/openapi.json');
  expect(res.status).toBe(200);
  return (await res.json()) as Document;
}

/** `METHOD /path/{param}` of every route the app serves (middleware, registered for ALL, is not a route). */
function served(h: ReturnType<typeof harness>): Set<string> {
  return new Set(
    h.app.routes
      .filter((r) => r.method !== 'ALL')
      .map((r) => `${r.method} ${r.path.replace(/:([^/]+)/g, '{$1}')}`),
  );
}

function documented(doc: Document): Set<string> {
  const ops = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item).filter((k) => METHODS.includes(k))) {
      ops.add(`${method.toUpperCase()} ${path}`);
    }
  }
  return ops;
}

describe('/openapi.json covers the JSON API', () => {
  it('documents every route the app serves, but the ones left out with a reason', async () => {
    const h = everySurface();
    const doc = await documentOf(h);
    const ops = documented(doc);
    const missing = [...served(h)].filter(
      (route) => !(route in EXCLUDED) && !(DOCUMENTED_AS[route] ?? [route]).every((op) => ops.has(op)),
    );
    expect(missing).toEqual([]);
    // Spot checks that the surfaces other than proxies, leases and jobs are in (the lists above are exact).
    expect([...ops]).toEqual(
      expect.arrayContaining([
        'GET /healthz',
        'GET /v1/echo',
        'POST /v1/workers/register',
        'POST /v1/workers/{id}/ack',
        'POST /v1/workers/{id}/runtime',
        'POST /v1/workers/{id}/outcomes',
        'GET /v1/workers/{id}/snapshot',
        'GET /v1/gateway/workers',
        'GET /v1/gateway/ownership',
        'GET /v1/gateway/routing',
        'PUT /v1/gateway/routing',
        'POST /v1/gateway/reclaims/{proxy}',
        'DELETE /v1/gateway/reclaims/{proxy}',
      ]),
    );
  });

  it('documents nothing that is not served, and excludes nothing that is not served', async () => {
    const h = everySurface();
    const routes = served(h);
    const aliases = new Set(Object.values(DOCUMENTED_AS).flat());
    const phantom = [...documented(await documentOf(h))].filter((op) => !routes.has(op) && !aliases.has(op));
    expect(phantom).toEqual([]);
    expect(Object.keys(EXCLUDED).filter((route) => !routes.has(route))).toEqual([]);
  });

  it('documents only the surfaces mounted', async () => {
    const doc = await documentOf(harness());
    const paths = Object.keys(doc.paths);
    expect(paths.filter((p) => /^\/(v1\/(workers|gateway|echo|leases)|fleet)/.test(p))).toEqual([]);
    expect(Object.keys(doc.components.securitySchemes ?? {})).not.toContain('fleetCookie');
  });
});

describe('/openapi.json names what a GET answers a body with', () => {
  // The gateway and worker GETs bound their own bodies (app.ts skips them) and refuse one (docs/api.md
  // § Errors): a client reading the document learns both answers.
  it('documents 400 unexpected_body and the 1 KiB 413 on every gateway and worker GET', async () => {
    const doc = await documentOf(everySurface());
    const gets = Object.entries(doc.paths)
      .filter(([path, item]) => item.get && /^\/v1\/(gateway|workers)\//.test(path))
      .map(([path, item]) => {
        const responses = item.get?.responses as Record<string, { description: string } | undefined>;
        return {
          path,
          400: responses['400']?.description.includes('unexpected_body'),
          413: responses['413']?.description.startsWith('payload_too_large: the body is over 1 KiB'),
        };
      });
    expect(gets.map((g) => g.path).sort()).toEqual([
      '/v1/gateway/ownership',
      '/v1/gateway/routing',
      '/v1/gateway/workers',
      '/v1/workers/{id}/snapshot',
    ]);
    expect(gets.filter((g) => !g[400] || !g[413])).toEqual([]);
  });

  it('documents the 500 stored_document_invalid of the admin reads of the ownership state', async () => {
    // A hand-edited ownership/state or shard: both routes read them, and answered a 500 not declared.
    const doc = await documentOf(everySurface());
    for (const path of ['/v1/gateway/workers', '/v1/gateway/ownership']) {
      const responses = doc.paths[path]?.get?.responses as Record<
        string,
        { description: string } | undefined
      >;
      expect(responses['500']?.description, path).toMatch(/^stored_document_invalid/);
    }
  });

  it('declares the fields worker refusals carry beside error and message', async () => {
    const error = (doc: Document) =>
      (doc as unknown as { components: { schemas: Record<string, { properties: Record<string, unknown> }> } })
        .components.schemas.Error!.properties;
    const props = error(await documentOf(everySurface()));
    expect(Object.keys(props)).toEqual(expect.arrayContaining(['revokeProxyIds', 'supported']));
  });
});

describe('/openapi.json is a well-formed OpenAPI 3.1 document', () => {
  it('resolves every $ref', async () => {
    const doc = await documentOf(everySurface());
    const refs: string[] = [];
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') {
        for (const [k, child] of Object.entries(v)) {
          if (k === '$ref' && typeof child === 'string') refs.push(child);
          else walk(child);
        }
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(0);
    const resolves = (ref: string) => {
      if (!ref.startsWith('#/')) return false;
      let at: unknown = doc;
      for (const raw of ref.slice(2).split('/')) {
        const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
        if (!at || typeof at !== 'object' || !Object.hasOwn(at, key)) return false;
        at = (at as Record<string, unknown>)[key];
      }
      return true;
    };
    expect([...new Set(refs)].filter((r) => !resolves(r))).toEqual([]);
  });

  it('declares every path parameter of every operation, required, and no other', async () => {
    const doc = await documentOf(everySurface());
    const problems: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      const inTemplate = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const method of Object.keys(item).filter((k) => METHODS.includes(k))) {
        const op = item[method] as Operation;
        const params = [...(item.parameters ?? []), ...(op.parameters ?? [])];
        const declared = params.filter((p) => p.in === 'path');
        for (const name of inTemplate) {
          const p = declared.find((d) => d.name === name);
          if (!p) problems.push(`${method} ${path}: {${name}} not declared`);
          else if (p.required !== true) problems.push(`${method} ${path}: {${name}} not required`);
        }
        for (const d of declared) {
          if (!inTemplate.includes(d.name)) problems.push(`${method} ${path}: ${d.name} not in the path`);
        }
        const keys = params.map((p) => `${p.in}:${p.name}`);
        if (new Set(keys).size !== keys.length) problems.push(`${method} ${path}: a parameter twice`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('has the required fields, responses on every operation, and only declared security schemes', async () => {
    const doc = await documentOf(everySurface());
    expect(doc.openapi).toBe('3.1.0');
    expect(typeof doc.info.title).toBe('string');
    expect(typeof doc.info.version).toBe('string');
    const schemes = doc.components.securitySchemes ?? {};
    expect(Object.keys(schemes).sort()).toEqual(['admin', 'crawler', 'fleetCookie', 'worker']);
    const problems: string[] = [];
    const checkSecurity = (where: string, security: Operation['security']) => {
      for (const requirement of security ?? []) {
        for (const name of Object.keys(requirement)) {
          if (!(name in schemes)) problems.push(`${where}: unknown security scheme ${name}`);
        }
      }
    };
    checkSecurity('document', doc.security);
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!path.startsWith('/')) problems.push(`${path}: does not start with /`);
      for (const method of Object.keys(item).filter((k) => METHODS.includes(k))) {
        const op = item[method] as Operation;
        if (Object.keys(op.responses ?? {}).length === 0) problems.push(`${method} ${path}: no responses`);
        for (const code of Object.keys(op.responses ?? {})) {
          if (!/^([1-5]\d\d|[1-5]XX|default)$/.test(code))
            problems.push(`${method} ${path}: response ${code}`);
        }
        checkSecurity(`${method} ${path}`, op.security);
      }
    }
    expect(problems).toEqual([]);
  });

  it('names the credential each surface takes', async () => {
    const doc = await documentOf(everySurface());
    const security = (method: string, path: string) => {
      const op = doc.paths[path]?.[method] as Operation | undefined;
      return op?.security ?? doc.security;
    };
    const admin = [{ admin: [] }];
    const crawler = [{ crawler: [] }, { admin: [] }];
    expect(security('post', '/v1/proxies')).toEqual(admin);
    expect(security('get', '/v1/proxies')).toEqual(crawler);
    expect(security('post', '/v1/leases')).toEqual(crawler);
    expect(security('get', '/v1/jobs')).toEqual(admin);
    expect(security('put', '/v1/gateway/routing')).toEqual(admin);
    expect(security('post', '/v1/workers/register')).toEqual([{ worker: [] }]);
    expect(security('get', '/v1/workers/{id}/snapshot')).toEqual([{ worker: [] }]);
    // The fleet page's JSON: an admin Bearer credential, or the page's cookie holding one.
    const fleet = [{ admin: [] }, { fleetCookie: [] }];
    expect(security('get', '/fleet/api/state')).toEqual(fleet);
    expect(security('get', '/fleet/api/proxies/{name}')).toEqual(fleet);
    expect(security('get', '/healthz')).toEqual([]);
    expect(security('get', '/v1/echo')).toEqual([]);
  });
});
