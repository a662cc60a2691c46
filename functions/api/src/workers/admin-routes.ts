// Admin routes of the gateway control plane (admin auth): the workers and their standing, ownership with
// fail-closed usable capacity, the routing every snapshot carries, and reclaims (take a pool proxy out for
// an exclusive lease). Changes ask the snapshot function for a pass at once.
import { Hono } from 'hono';
import { z } from 'zod';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { AttributeKey, ProxyName } from '../../../../shared/src/domain/proxy.js';
import { DEFAULT_ROUTING } from '../../../../shared/src/domain/snapshots/content.js';
import { ownedBy } from '../../../../shared/src/domain/workers/ownership.js';
import type { WorkerSettings } from '../../../../shared/src/domain/workers/settings.js';
import { viewCutoff } from '../../../../shared/src/domain/workers/view.js';
import { MAX_TARGET_CHECKS, RoutingRules } from '../../../../shared/src/messages/gateway-snapshot.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { ProxyStore } from '../../../../shared/src/ports/proxy-store.js';
import type { WorkerStore } from '../../../../shared/src/ports/workers.js';
import type {
  OwnershipStore,
  ReclaimStore,
  RoutingStore,
} from '../../../../shared/src/ports/workers-ownership.js';
import type {
  GatewayPoolReader,
  SnapshotRequester,
  SnapshotStore,
} from '../../../../shared/src/ports/workers-snapshots.js';
import type { Authenticator, Principal } from '../auth/authenticator.js';
import { requireAdmin } from '../auth/middleware.js';
import { noBody } from '../middleware/no-body.js';
import { noQuery } from '../middleware/no-query.js';
import { queryNames } from '../middleware/query-names.js';
import { ownershipView, workerView } from './admin-views.js';
import { WorkerApiError, workerErrors } from './errors.js';
import { json, limitBytes, parseBody } from './http.js';
import { requestPass } from './service-deps.js';

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
}

// The stored routing's rule (the wire schema's plus each route's targetCheck, which snapshots leave out;
// unique names included): what is accepted here, every worker accepts.
// Selector keys are held to the proxy attribute-key rule on top of it: a key that is not an attribute key
// can never match a proxy, and some are not even storable ("__name__", "__x__" are Firestore-reserved
// field names: the write failed on every retry). Only here, not in the wire schema: routing documents and
// snapshots already stored with such keys must still parse.
const SelectorKeys = z.record(AttributeKey, z.unknown());
const RoutingBody = z
  .object({ routes: RoutingRules.min(1) })
  .strict()
  .superRefine((body, ctx) => {
    const checked = body.routes.filter((r) => r.targetCheck !== undefined).length;
    if (checked > MAX_TARGET_CHECKS) {
      ctx.addIssue({
        code: 'custom',
        path: ['routes'],
        message: `at most ${MAX_TARGET_CHECKS} routes may carry a targetCheck (${checked} do)`,
        params: { issue: 'too_many_target_checks' },
      });
    }
    body.routes.forEach((route, i) => {
      const keys = SelectorKeys.safeParse(route.selector);
      for (const issue of keys.success ? [] : keys.error.issues) {
        ctx.addIssue({ ...issue, path: ['routes', i, 'selector', ...issue.path] });
      }
    });
  });
const ReclaimBody = z
  .object({
    ttlSeconds: z
      .number()
      .int()
      .min(60)
      .max(7 * 86_400),
  })
  .strict();

// `?all=true` lists every stored worker document (one per gateway instance started on Cloud Run within the
// retention: domain/workers/retention.ts), a page at a time: for finding an old one. The default is what
// the snapshot pass sees (domain/workers/view.ts), a set bounded by the instances alive in the last hour.
const AllQuery = z.enum(['true', 'false']).optional();
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;
const PageSize = z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE);
// The token is the last worker id of the page before, base64url-encoded: opaque to callers, and no worker
// id needs escaping in a URL.
const PageToken = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,2048}$/)
  .transform((t) => Buffer.from(t, 'base64url').toString('utf8'))
  // What no document id can be (empty, or with a slash): Firestore's client throws on such a cursor before
  // it reads anything, which is the caller's token at fault, not a 500.
  .refine((id) => id !== '' && !id.includes('/'))
  .optional();
const pageTokenOf = (workerId: string) => Buffer.from(workerId, 'utf8').toString('base64url');
const LIST_PARAMS = new Set(['all', 'pageSize', 'pageToken']);
/** `all`, `pageSize` and `pageToken` are the query parameters of these routes: any other is refused, not
 *  ignored (no-query.ts). */
const onlyListParams = queryNames((n) => LIST_PARAMS.has(n), 'use all, pageSize, pageToken');

const who = (p: Principal | undefined) =>
  !p ? 'unknown' : p.kind === 'google' ? p.email : p.kind === 'token' ? `token:${p.name}` : 'local';

export function gatewayAdminRoutes(deps: GatewayAdminDeps) {
  const app = new Hono<{ Variables: { principal: Principal } }>();
  app.onError(workerErrors(deps.log));
  app.use('*', requireAdmin(deps.auth));
  const pass = (reason: string) => requestPass(deps, reason);

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

  app.get('/workers', onlyListParams, async (c) => {
    const all = AllQuery.safeParse(c.req.query('all'));
    if (!all.success) throw new WorkerApiError(400, 'invalid_request', 'all must be true or false');
    const everything = all.data === 'true';
    const paging = c.req.query('pageSize') !== undefined || c.req.query('pageToken') !== undefined;
    if (paging && !everything) {
      throw new WorkerApiError(400, 'invalid_request', 'pageSize and pageToken page all=true only');
    }
    const size = PageSize.safeParse(c.req.query('pageSize'));
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
    return c.json({
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
    });
  });

  app.get('/ownership', noQuery(), async (c) => {
    // An owner out of view holds no grant (view.ts): its proxies show ownership_expired either way.
    const now = deps.clock.now();
    const [{ workers, headers }, state, pool] = await Promise.all([
      readWorkers(now),
      deps.ownership.read(),
      deps.pool.inPool(),
    ]);
    return c.json({
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
    });
  });

  app.get('/routing', noQuery(), async (c) => {
    const r = await deps.routing.get();
    return c.json(
      r
        ? {
            routes: r.routes,
            updatedAt: r.updatedAt.toISOString(),
            updatedBy: r.updatedBy,
            default: false,
            ...(r.droppedDuplicates.length > 0 ? { droppedDuplicates: r.droppedDuplicates } : {}),
          }
        : { routes: DEFAULT_ROUTING, updatedAt: null, updatedBy: null, default: true },
    );
  });

  app.put('/routing', limitBytes(256 * 1024), noQuery(), json(), async (c) => {
    const body = await parseBody(c, RoutingBody);
    await deps.routing.put({
      routes: body.routes,
      updatedAt: deps.clock.now(),
      updatedBy: who(c.var.principal),
    });
    await pass('admin');
    return c.json({ routes: body.routes });
  });

  app.post('/reclaims/:proxy', limitBytes(1024), noQuery(), json(), async (c) => {
    const proxy = ProxyName.safeParse(c.req.param('proxy'));
    if (!proxy.success) throw new WorkerApiError(400, 'invalid_request', 'not a proxy name');
    const body = await parseBody(c, ReclaimBody);
    if (!(await deps.proxies.get(proxy.data))) {
      throw new WorkerApiError(404, 'not_found', `no proxy named ${proxy.data}`);
    }
    const now = deps.clock.now();
    const until = new Date(now.getTime() + body.ttlSeconds * 1000);
    await deps.reclaims.put({
      proxy: proxy.data,
      requestedAt: now,
      requestedBy: who(c.var.principal),
      until,
    });
    await pass('admin');
    return c.json({ proxy: proxy.data, until: until.toISOString() }, 201);
  });

  // Idempotent: 204 whether or not there was a reclaim, but a pass only when one was dropped.
  app.delete('/reclaims/:proxy', limitBytes(1024), noQuery(), noBody(), async (c) => {
    const proxy = ProxyName.safeParse(c.req.param('proxy'));
    if (!proxy.success) throw new WorkerApiError(400, 'invalid_request', 'not a proxy name');
    if (await deps.reclaims.delete(proxy.data)) await pass('admin');
    return c.body(null, 204);
  });

  return app;
}
