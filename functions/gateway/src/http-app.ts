// The HTTP listener (Cloud Run's $PORT): POST /v1/fetch, /healthz, /readyz and /metrics, as a Hono app
// built from plain parameters. Fetch callers authenticate with `Authorization: Bearer <token>`, or with a
// client user as `Proxy-Authorization: Basic` or `Authorization: Basic`. Behind Cloud Run IAM the caller's
// identity token goes in X-Serverless-Authorization, leaving Authorization to us (docs/deploy.md):
// Proxy-Authorization is documented as stripped for Cloud Run functions, so nothing relies on it there.
import { Readable, Transform } from 'node:stream';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ClientAuth } from './client-auth.js';
import { DROPPED_RESPONSE_HEADERS, FetchRequest } from './fetch-request.js';
import { type FetchDeps, fetchThrough } from './fetch-through.js';
import type { Logger } from './logger.js';
import type { PromRecorder } from './metrics.js';
import type { SocketCounts } from './sockets.js';
import type { GatewayWorker } from './worker.js';

const NOT_JSON = Symbol('not JSON');

export interface HttpAppDeps extends FetchDeps {
  auth: ClientAuth;
  metrics: PromRecorder;
  sockets: SocketCounts;
  worker: GatewayWorker;
  maxBodyBytes: number;
  maxResponseBytes: number;
  version: string;
  log: Logger;
  /** Controller mode: the session's state (registered, ACK bound, message counters). */
  control?: () => Record<string, unknown>;
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function authenticate(auth: ClientAuth, proxyAuth?: string, authorization?: string): string | null {
  const viaProxy = auth.basic(proxyAuth);
  if (viaProxy !== null) return viaProxy;
  if (authorization?.toLowerCase().startsWith('bearer ')) return auth.bearer(authorization) ? '' : null;
  return auth.basic(authorization);
}

/** Ends the body stream once more than `max` bytes went through: a bounded answer, never an unbounded one. */
function capped(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > max) cb(new Error('response larger than GATEWAY_FETCH_MAX_RESPONSE_BYTES'));
      else cb(null, chunk);
    },
  });
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
        ? { version: s.version, ownershipEpoch: s.ownershipEpoch, proxies: s.upstreams.size }
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

  app.post(
    '/v1/fetch',
    bodyLimit({
      maxSize: deps.maxBodyBytes,
      onError: (c) => {
        deps.recorder.request('fetch', '-', 'body_too_large');
        return c.json({ error: 'body_too_large' }, 413, { 'X-Proxyplane-Error': 'body_too_large' });
      },
    }),
    async (c) => {
      const user = authenticate(
        deps.auth,
        c.req.header('proxy-authorization'),
        c.req.header('authorization'),
      );
      if (user === null) {
        deps.recorder.request('fetch', '-', 'unauthorized');
        return c.json({ error: 'unauthorized' }, 401, {
          'WWW-Authenticate': 'Bearer, Basic realm="proxyplane"',
          'X-Proxyplane-Error': 'unauthorized',
        });
      }
      const json: unknown = await c.req.json().catch(() => NOT_JSON);
      const parsed = FetchRequest.safeParse(json);
      if (!parsed.success) {
        deps.recorder.request('fetch', '-', 'bad_request');
        const issues =
          json === NOT_JSON
            ? [{ path: '', message: 'the body is not JSON' }]
            : parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
        return c.json({ error: 'bad_request', issues }, 400, { 'X-Proxyplane-Error': 'bad_request' });
      }
      const r = await fetchThrough(parsed.data, user, deps);
      if (!r.ok) {
        deps.recorder.request('fetch', '-', r.code);
        return c.json({ error: r.code, ...r.detail }, r.status as 400, { 'X-Proxyplane-Error': r.code });
      }
      const res = r.response;
      const status = res.statusCode ?? 0;
      // Node's parser takes any three digits; a Response cannot carry a status outside 200–599.
      if (status < 200 || status > 599) {
        res.destroy();
        r.done();
        deps.recorder.request('fetch', r.route, 'target_bad_response');
        return c.json({ error: 'target_bad_response', status }, 502, {
          'X-Proxyplane-Error': 'target_bad_response',
        });
      }
      deps.recorder.request('fetch', r.route, 'ok');
      const headers = new Headers();
      for (let i = 0; i < res.rawHeaders.length; i += 2) {
        const name = res.rawHeaders[i]!;
        if (!DROPPED_RESPONSE_HEADERS.has(name.toLowerCase())) headers.append(name, res.rawHeaders[i + 1]!);
      }
      headers.set('X-Proxyplane-Route', r.route);
      if (NULL_BODY.has(status) || parsed.data.method.toUpperCase() === 'HEAD') {
        // No body follows: the target's Content-Length (of the representation, for HEAD or 304) would make
        // our client wait for bytes that never come.
        headers.delete('content-length');
        res.resume();
        res.once('end', r.done);
        return new Response(null, { status, headers });
      }
      const body = res.pipe(capped(deps.maxResponseBytes));
      res.once('error', (err) => body.destroy(err));
      body.once('close', r.done);
      return new Response(Readable.toWeb(body) as ReadableStream, { status, headers });
    },
  );
  app.notFound((c) => c.json({ error: 'not_found' }, 404));
  app.onError((err, c) => {
    deps.log.error('http handler failed', { error: err.message, path: c.req.path });
    return c.json({ error: 'internal' }, 500);
  });
  return app;
}
