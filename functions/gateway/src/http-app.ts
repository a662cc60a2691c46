// The HTTP listener (Cloud Run's $PORT): POST /v1/fetch (natively, fetch-handler.ts) and /healthz, /readyz,
// /metrics in a Hono app, both built from plain parameters. Fetch callers authenticate with `Authorization: Bearer <token>`, or with a
// client user as `Proxy-Authorization: Basic` or `Authorization: Basic`. Behind Cloud Run IAM the caller's
// identity token goes in X-Serverless-Authorization, leaving Authorization to us (docs/deploy.md):
// Proxy-Authorization is documented as stripped for Cloud Run functions, so nothing relies on it there.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { createFetchHandler, type FetchHandlerDeps } from './fetch-handler.js';
import type { PromRecorder } from './metrics.js';
import type { SocketCounts } from './sockets.js';
import type { GatewayWorker } from './worker.js';

export interface HttpAppDeps extends FetchHandlerDeps {
  metrics: PromRecorder;
  sockets: SocketCounts;
  worker: GatewayWorker;
  version: string;
  /** Controller mode: the session's state (registered, ACK bound, message counters). */
  control?: () => Record<string, unknown>;
}

export function createHttpApp(deps: HttpAppDeps) {
  const app = new Hono();
  const health = () => {
    const s = deps.worker.snapshot();
    return {
      phase: deps.worker.phase(),
      accepting: deps.worker.accepting,
      version: deps.version,
      snapshot: s
        ? {
            version: s.version,
            ownershipEpoch: s.ownershipEpoch,
            proxies: s.upstreams.size,
            suspect: s.suspectUpstreams,
          }
        : null,
      sockets: { ...deps.sockets },
      load: deps.worker.totals(),
      outcomes: { queued: deps.worker.outcomes.size, dropped: deps.worker.outcomes.dropped },
      ...(deps.control ? { control: deps.control() } : {}),
    };
  };
  app.get('/healthz', (c) => c.json({ ok: true, ...health() }));
  app.get('/readyz', (c) => c.json(health(), deps.worker.accepting ? 200 : 503));
  app.get('/metrics', async (c) =>
    c.text(await deps.metrics.registry.metrics(), 200, { 'content-type': deps.metrics.registry.contentType }),
  );

  app.notFound((c) => c.json({ error: 'not_found' }, 404));
  app.onError((err, c) => {
    deps.log.error('http handler failed', { error: err.message, path: c.req.path });
    return c.json({ error: 'internal' }, 500);
  });
  return app;
}

/**
 * The `/v1/fetch` path as it reached the Hono route before: the query ignored, dot segments resolved (the
 * adaptor's WHATWG URL), percent-encoding decoded (Hono's router). The common case costs one comparison.
 */
function isFetchPath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path === '/v1/fetch') return true;
  if (!path.includes('%') && !path.includes('.')) return false;
  try {
    return decodeURI(new URL(path, 'http://h').pathname) === '/v1/fetch';
  } catch {
    return false;
  }
}

/**
 * The listener's request handler: POST /v1/fetch natively (fetch-handler.ts: the data path, where the
 * adaptor's web objects cost as much CPU as the fetch), everything else through the Hono app.
 */
export function createHttpListener(deps: HttpAppDeps, hostname?: string) {
  const fetch = createFetchHandler(deps);
  const rest = getRequestListener(createHttpApp(deps).fetch, { hostname });
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method === 'POST' && isFetchPath(req.url ?? '')) void fetch(req, res);
    else void rest(req, res);
  };
}
