// The admin routes, mounted at /v1/proxies. Handlers are inline so that the validated input types flow
// from the route definitions; the work is in admin/proxy-admin.ts.
import { OpenAPIHono } from '@hono/zod-openapi';
import { etagOf, type IfMatch, parseIfMatch, proxyTag } from '../admin/if-match.js';
import type { ProxyAdmin } from '../admin/proxy-admin.js';
import { mergeWith, replaceWith } from '../admin/spec-changes.js';
import { isCrawler } from '../discovery/auth.js';
import { crawlerView, type DiscoveryView, healthOnlyView } from '../discovery/list.js';
import { invalidRequest } from '../errors.js';
import { validationHook } from '../validation/hook.js';
import { DEFAULT_LIST_PAGE_SIZE, filtersTag, fitPage, MAX_PAGE_BYTES, pageTokenOf } from './list-paging.js';
import {
  createProxyRoute,
  deleteProxyRoute,
  getProxyRoute,
  listProxiesRoute,
  patchSpecRoute,
  reconcileProxyRoute,
  replaceSpecRoute,
} from './proxy-routes.js';
import { attributeFilter, listFilters } from './proxy-schemas.js';

/** How many skipped documents a listing names (its `skipped.count` counts them all). */
const MAX_SKIPPED_NAMES = 100;

/** The ETag of a proxy in a response (every response whose body is one proxy). */
const etag = (proxy: { generation: number; uid: string }) => ({ ETag: etagOf(proxyTag(proxy)) });

/** The validated If-Match (IfMatchHeader refused a malformed one), or undefined when absent. */
const ifMatchOf = (headers: { 'If-Match'?: string }): IfMatch | undefined =>
  headers['If-Match'] === undefined ? undefined : (parseIfMatch(headers['If-Match']) ?? undefined);

export const proxyRoutes = (admin: ProxyAdmin, discovery: DiscoveryView = healthOnlyView) =>
  new OpenAPIHono({ defaultHook: validationHook })
    .openapi(createProxyRoute, async (c) => {
      const { name, spec } = c.req.valid('json');
      const proxy = await admin.create(name, spec);
      return c.json(proxy, 201, { Location: `/v1/proxies/${name}`, ...etag(proxy) });
    })
    .openapi(listProxiesRoute, async (c) => {
      const query = c.req.valid('query');
      const filter = { phase: query.phase, attributes: attributeFilter(query) };
      // Paged when either paging parameter is given (list-paging.ts); otherwise every matching proxy, as
      // before paging: a client that does not know nextPageToken still gets the whole fleet.
      const paged = query.pageSize !== undefined || query.pageToken !== undefined;
      const tag = filtersTag(listFilters(query));
      if (query.pageToken !== undefined && query.pageToken.tag !== tag) {
        throw invalidRequest('invalid query string', [
          {
            path: 'pageToken',
            code: 'custom',
            message: 'the page token continues a listing with other filters: send the same ones',
          },
        ]);
      }
      const {
        proxies: stored,
        skipped,
        next,
      } = await discovery.read(async () =>
        paged
          ? await admin.page(filter, {
              after: query.pageToken?.after ?? null,
              size: query.pageSize ?? DEFAULT_LIST_PAGE_SIZE,
            })
          : { ...(await admin.list(filter)), next: null },
      );
      const flag = (v: 'true' | 'false' | undefined) => (v === undefined ? undefined : v === 'true');
      const proxies = await discovery.list(stored, {
        healthy: flag(query.healthy),
        leasable: flag(query.leasable),
        protocol: query.protocol,
      });
      const crawler = isCrawler(c.get('principal'));
      const all = crawler ? proxies.map(crawlerView) : proxies;
      // A page too large for one answer ends early; the next starts after its last proxy, and only the
      // documents left out before that are told of here (the next page tells the others).
      const { kept: listed, cutAfter } = paged ? fitPage(all, MAX_PAGE_BYTES) : { kept: all, cutAfter: null };
      const after = cutAfter ?? next;
      const left = cutAfter === null ? skipped : skipped.filter((s) => s.name <= cutAfter);
      // An admin is told of the documents left out (a crawler could not act on it): added only when there
      // are any, so the envelope of a healthy fleet is the one it always was.
      const told = !crawler && left.length > 0;
      const names = left.slice(0, MAX_SKIPPED_NAMES).map((s) => s.name);
      return c.json(
        {
          proxies: listed,
          count: listed.length,
          ...(paged ? { nextPageToken: after === null ? null : pageTokenOf(after, tag) } : {}),
          ...(told ? { skipped: { count: left.length, names } } : {}),
          // Said on every crawler listing, whether or not a proxy had one: the listing is then not a copy
          // of the specs, and the CLI refuses to apply it (cli/proxy-file.ts).
          ...(crawler ? { redacted: ['spec.cloudInit' as const] } : {}),
        },
        200,
      );
    })
    .openapi(getProxyRoute, async (c) => {
      const proxy = await admin.get(c.req.valid('param').name);
      return c.json(proxy, 200, etag(proxy));
    })
    .openapi(replaceSpecRoute, async (c) => {
      const { name } = c.req.valid('param');
      const proxy = await admin.updateSpec(
        name,
        replaceWith(c.req.valid('json')),
        ifMatchOf(c.req.valid('header')),
      );
      return c.json(proxy, 200, etag(proxy));
    })
    .openapi(patchSpecRoute, async (c) => {
      const { name } = c.req.valid('param');
      const proxy = await admin.updateSpec(
        name,
        mergeWith(c.req.valid('json')),
        ifMatchOf(c.req.valid('header')),
      );
      return c.json(proxy, 200, etag(proxy));
    })
    .openapi(deleteProxyRoute, async (c) => {
      const proxy = await admin.requestDeletion(c.req.valid('param').name, ifMatchOf(c.req.valid('header')));
      if ('storedProxyInvalid' in proxy) return c.json(proxy, 202);
      return c.json(proxy, 202, etag(proxy));
    })
    .openapi(reconcileProxyRoute, async (c) => {
      const { name } = c.req.valid('param');
      await admin.requestReconcile(name);
      return c.json({ proxy: name, reason: 'manual' as const }, 202);
    });
