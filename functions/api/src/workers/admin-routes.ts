// Admin routes of the gateway control plane (admin auth): the workers and their standing, ownership with
// fail-closed usable capacity, the routing every snapshot carries, and reclaims (take a pool proxy out for
// an exclusive lease). Changes ask the snapshot function for a pass at once.
import { OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_ROUTING } from '../../../../shared/src/domain/snapshots/content.js';
import { ownedBy } from '../../../../shared/src/domain/workers/ownership.js';
import type { WorkerSettings } from '../../../../shared/src/domain/workers/settings.js';
import { viewCutoff } from '../../../../shared/src/domain/workers/view.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { ProxyStore } from '../../../../shared/src/ports/proxy-store.js';
import { type WorkerStore, WorkerStoreError } from '../../../../shared/src/ports/workers.js';
import {
  NO_ROUTING_REVISION,
  type OwnershipStore,
  type ReclaimStore,
  type RoutingStore,
} from '../../../../shared/src/ports/workers-ownership.js';
import type {
  GatewayPoolReader,
  SnapshotRequester,
  SnapshotStore,
} from '../../../../shared/src/ports/workers-snapshots.js';
import { describeIfMatch, etagOf, ifMatchHolds, parseIfMatch } from '../admin/if-match.js';
import type { Authenticator, Principal } from '../auth/authenticator.js';
import { requireAdmin } from '../auth/middleware.js';
import { noBody } from '../middleware/no-body.js';
import { queryNames } from '../middleware/query-names.js';
import {
  AllQuery,
  deleteReclaimRoute,
  type GatewayWorkerList,
  getRoutingRoute,
  listWorkersRoute,
  MAX_PAGE_SIZE,
  ownershipRoute,
  PageSize,
  PageToken,
  postReclaimRoute,
  putRoutingRoute,
} from './admin-openapi.js';
import { ownershipView, workerView } from './admin-views.js';
import { WorkerApiError, workerErrors } from './errors.js';
import { limitBytes, workerHook } from './http.js';
import { requestPass, writeAsking } from './service-deps.js';

export interface GatewayAdminDeps {
  auth: Authenticator;
  workers: Pick<WorkerStore, 'page' | 'listInView'>;
  ownership: Pick<OwnershipStore, 'read'>;
  snapshots: Pick<SnapshotStore, 'headersOf' | 'headersInView'>;
  pool: GatewayPoolReader;
  routing: RoutingStore;
  reclaims: ReclaimStore;
  /** A reclaim names a proxy that must exist (one created later under that name must not start reclaimed). */
  proxies: Pick<ProxyStore, 'get'>;
  requester: SnapshotRequester;
  clock: Clock;
  log: Logger;
  settings: WorkerSettings;
  /** The app's per-caller rate limit (middleware/caller-rate-limit.ts), run after this sub-app's auth. */
  callerLimit?: MiddlewareHandler;
}

const pageTokenOf = (workerId: string) => Buffer.from(workerId, 'utf8').toString('base64url');
const LIST_PARAMS = new Set(['all', 'pageSize', 'pageToken']);
/** `all`, `pageSize` and `pageToken` are the query parameters of these routes: any other is refused, not
 *  ignored (no-query.ts). */
const onlyListParams = queryNames((n) => LIST_PARAMS.has(n), 'use all, pageSize, pageToken');

const who = (p: Principal | undefined) =>
  !p ? 'unknown' : p.kind === 'google' ? p.email : p.kind === 'token' ? `token:${p.name}` : 'local';

export function gatewayAdminRoutes(deps: GatewayAdminDeps) {
  const app = new OpenAPIHono<{ Variables: { principal: Principal } }>({
    defaultHook: workerHook('not a proxy name'),
  });
  app.onError(workerErrors(deps.log));
  app.use('*', requireAdmin(deps.auth));
  if (deps.callerLimit) app.use('*', deps.callerLimit);
  const pass = (reason: string) => requestPass(deps, reason);
  /** A write the snapshot pass plans with: given up at its deadline, it asks for the pass (writeAsking). */
  const planned = <T>(write: () => Promise<T>) => writeAsking(deps, write, 'admin');

  /** Workers and headers in view at `now`, read as the snapshot pass reads them. */
  const readWorkers = async (now: Date) => {
    const cutoff = viewCutoff(now, deps.settings);
    const workers = await deps.workers.listInView(cutoff);
    const ids = workers.map((w) => w.session.workerId);
    return { workers, headers: await deps.snapshots.headersInView(ids, cutoff) };
  };

  /** One page of every stored worker, with their headers. */
  const readPage = async (after: string | null, size: number) => {
    const page = await deps.workers.page(after, size);
    const headers = await deps.snapshots.headersOf(page.records.map((w) => w.session.workerId));
    return { workers: page.records, headers, next: page.next };
  };

  // Documented, not validated by the route's query validator: each parameter has its own 400 message,
  // checked in this order (and pageSize/pageToken without all=true before the values of either). A body is
  // refused (400 unexpected_body) as on the other GETs, bounded first (these routes skip the app's limit).
  app.openAPIRegistry.registerPath(listWorkersRoute);
  app.get('/workers', limitBytes(1024), onlyListParams, noBody(), async (c) => {
    const all = AllQuery.safeParse(c.req.query('all'));
    if (!all.success) throw new WorkerApiError(400, 'invalid_request', 'all must be true or false');
    const everything = all.data === 'true';
    const paging = c.req.query('pageSize') !== undefined || c.req.query('pageToken') !== undefined;
    if (paging && !everything) {
      throw new WorkerApiError(400, 'invalid_request', 'pageSize and pageToken page all=true only');
    }
    // Decimal digits only: the schema's coercion (Number) also read ' 1', '0x10' and '1e2' as sizes.
    const rawSize = c.req.query('pageSize');
    const size = PageSize.safeParse(rawSize === undefined || /^[0-9]+$/.test(rawSize) ? rawSize : 'x');
    if (!size.success) {
      throw new WorkerApiError(400, 'invalid_request', `pageSize must be an integer in 1–${MAX_PAGE_SIZE}`);
    }
    const token = PageToken.safeParse(c.req.query('pageToken'));
    if (!token.success) throw new WorkerApiError(400, 'invalid_request', 'not a page token');
    const now = deps.clock.now();
    const [{ workers, headers, next }, state] = await Promise.all([
      everything
        ? readPage(token.data ?? null, size.data)
        : readWorkers(now).then((r) => ({ ...r, next: null })),
      deps.ownership.read(),
    ]);
    const list: GatewayWorkerList = {
      epoch: state.epoch,
      validAfter: everything ? null : viewCutoff(now, deps.settings).toISOString(),
      ...(everything ? { nextPageToken: next === null ? null : pageTokenOf(next) } : {}),
      workers: workers.map((w) =>
        workerView(
          w,
          headers.get(w.session.workerId),
          ownedBy(w.session.workerId, state.records.values()).length,
          now,
        ),
      ),
    };
    return c.json(list);
  });

  app.openapi(ownershipRoute, async (c) => {
    // An owner out of view holds no grant (view.ts): its proxies show ownership_expired either way.
    const now = deps.clock.now();
    const [{ workers, headers }, state, pool] = await Promise.all([
      readWorkers(now),
      deps.ownership.read(),
      deps.pool.inPool(),
    ]);
    return c.json(
      {
        epoch: state.epoch,
        proxies: ownershipView({
          epoch: state.epoch,
          records: state.records,
          pool: pool.proxies,
          workers: new Map(workers.map((w) => [w.session.workerId, w])),
          headers,
          reportTtlMs: deps.settings.reportTtlMs,
          now,
        }),
      },
      200,
    );
  });

  app.openapi(getRoutingRoute, async (c) => {
    const r = await deps.routing.get().catch(async (err: unknown) => {
      if (!(err instanceof WorkerStoreError && err.kind === 'invalid')) throw err;
      // Hand-edited out of shape: snapshot passes plan with the last routing they published (or fail, with
      // none) until it is replaced, and a PUT (with If-Match of this revision) is how. Said so, with the revision, instead of an opaque 500.
      const revision = await deps.routing.revision();
      throw new WorkerApiError(
        500,
        'stored_routing_invalid',
        `the stored routing does not fit the route schema (${err.message}): PUT a routing to replace it; snapshot passes keep the last routing they published until then`,
        { revision },
        { ETag: etagOf(revision) },
      );
    });
    const revision = r?.revision ?? NO_ROUTING_REVISION;
    return c.json(
      r
        ? {
            routes: r.routes,
            updatedAt: r.updatedAt.toISOString(),
            updatedBy: r.updatedBy,
            default: false,
            ...(r.droppedDuplicates.length > 0 ? { droppedDuplicates: r.droppedDuplicates } : {}),
            revision,
          }
        : { routes: DEFAULT_ROUTING, updatedAt: null, updatedBy: null, default: true, revision },
      200,
      { ETag: etagOf(revision) },
    );
  });

  // If-Match makes the PUT conditional on the revision it was read at, checked in the store's transaction:
  // an edit made after the caller's read is never overwritten unseen (`proxyplane routing apply`).
  app.openapi(putRoutingRoute, async (c) => {
    const body = c.req.valid('json');
    const raw = c.req.valid('header')['If-Match'];
    const ifMatch = raw === undefined ? undefined : (parseIfMatch(raw) ?? undefined);
    const write = await planned(() =>
      deps.routing.put(
        { routes: body.routes, updatedAt: deps.clock.now(), updatedBy: who(c.var.principal) },
        ifMatch && ((revision) => ifMatchHolds(ifMatch, String(revision))),
      ),
    );
    if (!write.written && !write.unchanged) {
      throw new WorkerApiError(
        412,
        'precondition_failed',
        `the routing is at revision ${write.revision}, not ${describeIfMatch(ifMatch!).slice(0, 200)}`,
        { revision: write.revision },
        { ETag: etagOf(write.revision) },
      );
    }
    if (write.written) await pass('admin');
    return c.json({ routes: body.routes, revision: write.revision }, 200, { ETag: etagOf(write.revision) });
  });

  app.openapi(postReclaimRoute, async (c) => {
    const { proxy } = c.req.valid('param');
    const body = c.req.valid('json');
    const stored = await deps.proxies.get(proxy);
    if (!stored) throw new WorkerApiError(404, 'not_found', `no proxy named ${proxy}`);
    // Out of the pool already, and soon gone: a reclaim of it would only outlive it.
    if (stored.proxy.deletionRequestedAt) {
      throw new WorkerApiError(409, 'deletion_requested', `proxy ${proxy} is being deleted`);
    }
    const now = deps.clock.now();
    const until = new Date(now.getTime() + body.ttlSeconds * 1000);
    // Given up at its deadline (503) it may land all the same: the pass is asked for before the 503.
    await planned(() =>
      deps.reclaims.put({
        proxy,
        // This proxy's, not its name's: one created later under the name does not start reclaimed.
        uid: stored.proxy.uid,
        requestedAt: now,
        requestedBy: who(c.var.principal),
        until,
      }),
    );
    await pass('admin');
    return c.json({ proxy, until: until.toISOString() }, 201);
  });

  // Idempotent: 204 whether or not there was a reclaim, but a pass only when one was dropped.
  app.openapi(deleteReclaimRoute, async (c) => {
    const { proxy } = c.req.valid('param');
    if (await planned(() => deps.reclaims.delete(proxy))) await pass('admin');
    return c.body(null, 204);
  });

  return app;
}
