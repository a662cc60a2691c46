import { describe, expect, it } from 'vitest';
import { parseAllowList } from '../../../shared/src/domain/gateway/ssrf.js';
import { ClientAuth } from './client-auth.js';
import { CredentialCache, StaticCredentialResolver } from './credentials.js';
import { createHttpApp } from './http-app.js';
import { jsonLogger } from './logger.js';
import { PromRecorder } from './metrics.js';
import { newSocketCounts } from './sockets.js';
import { TargetGuard } from './target-guard.js';
import { UpstreamPool } from './upstream-pool.js';
import { GatewayWorker } from './worker.js';

function app() {
  const log = jsonLogger('error', () => {});
  const worker = new GatewayWorker({
    credentials: new CredentialCache(new StaticCredentialResolver(), 1000, Date.now),
    log,
    now: Date.now,
    maxStaleAgeMs: Number.POSITIVE_INFINITY,
    stickyTableSize: 10,
    outcomeQueueSize: 10,
  });
  const sockets = newSocketCounts();
  const metrics = new PromRecorder({
    activeTunnels: () => 0,
    reserved: () => 0,
    openSockets: () => ({ ...sockets }),
    snapshotAgeSeconds: () => null,
    snapshotVersion: () => null,
    accepting: () => worker.accepting,
    outcomeQueueSize: () => 0,
  });
  return createHttpApp({
    worker,
    guard: new TargetGuard(parseAllowList([]).allow, async () => ['8.8.8.8'], {
      ttlMs: 0,
      maxEntries: 1,
      now: Date.now,
    }),
    recorder: metrics,
    metrics,
    sockets,
    auth: new ClientAuth([{ username: 'c', password: 's' }], ['tok']),
    log,
    upstreamTimeoutMs: 1000,
    pool: new UpstreamPool(sockets, { idleMs: 0, maxIdlePerUpstream: 0 }),
    maxTimeoutMs: 1000,
    maxBodyBytes: 1024,
    maxResponseBytes: 1024,
    version: 't',
  });
}

const post = (body: string, headers: Record<string, string> = { authorization: 'Bearer tok' }) =>
  app().request('/v1/fetch', { method: 'POST', body, headers });

const basic = (userPass: string) => `Basic ${Buffer.from(userPass).toString('base64')}`;
const cloudRunIam = { 'x-serverless-authorization': 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig' };

describe('HTTP listener', () => {
  it.each([
    ['no credentials', post('{}', {}), 401, 'unauthorized'],
    ['a wrong token', post('{}', { authorization: 'Bearer nope' }), 401, 'unauthorized'],
    ['a body that is not JSON', post('not json'), 400, 'bad_request'],
    ['an ftp URL', post(JSON.stringify({ url: 'ftp://x/' })), 400, 'bad_request'],
    [
      'a header with a newline',
      post(JSON.stringify({ url: 'http://x/', headers: { a: 'b\r\nc: d' } })),
      400,
      'bad_request',
    ],
    [
      'a body over the limit',
      post(JSON.stringify({ url: 'http://x/', body: 'x'.repeat(2000) })),
      413,
      'body_too_large',
    ],
    ['no snapshot yet', post(JSON.stringify({ url: 'http://example.com/' })), 503, 'no_snapshot'],
    // docs/deploy.md's Cloud Run call: IAM's token in X-Serverless-Authorization, the client user in
    // Authorization. Past authentication, the request meets the missing snapshot.
    [
      'a client user in Authorization beside a Cloud Run identity token',
      post(JSON.stringify({ url: 'http://example.com/' }), { ...cloudRunIam, authorization: basic('c:s') }),
      503,
      'no_snapshot',
    ],
    [
      'a wrong client user beside a Cloud Run identity token',
      post(JSON.stringify({ url: 'http://example.com/' }), { ...cloudRunIam, authorization: basic('c:x') }),
      401,
      'unauthorized',
    ],
    ['a Cloud Run identity token alone', post('{}', cloudRunIam), 401, 'unauthorized'],
  ])('answers %s with %i', async (_label, res, status, code) => {
    const r = await res;
    expect(r.status).toBe(status);
    expect(((await r.json()) as { error: string }).error).toBe(code);
    // Every refusal says why twice: in the body and in the header (docs/gateway.md § Error codes).
    expect(r.headers.get('x-proxyplane-error')).toBe(code);
  });

  it('says which way a body is wrong: not JSON, or not the schema', async () => {
    const issues = async (res: Response | Promise<Response>) =>
      ((await (await res).json()) as { issues: Array<{ path: string; message: string }> }).issues;
    expect(await issues(post('not json'))).toEqual([{ path: '', message: 'the body is not JSON' }]);
    expect((await issues(post(JSON.stringify({ url: 'ftp://x/' }))))[0]?.path).toBe('url');
  });

  it('counts a body over the limit among the fetch requests', async () => {
    const a = app();
    const body = JSON.stringify({ url: 'http://x/', body: 'x'.repeat(2000) });
    const r = await a.request('/v1/fetch', {
      method: 'POST',
      body,
      headers: { authorization: 'Bearer tok' },
    });
    expect(r.status).toBe(413);
    const m = await (await a.request('/metrics')).text();
    expect(m).toContain('gateway_requests_total{listener="fetch",route="-",outcome="body_too_large"} 1');
  });

  it('reports health, readiness and metrics', async () => {
    const a = app();
    expect(await (await a.request('/healthz')).json()).toMatchObject({
      ok: true,
      phase: 'awaiting_snapshot',
      accepting: false,
    });
    expect((await a.request('/readyz')).status).toBe(503);
    const m = await (await a.request('/metrics')).text();
    expect(m).toContain('gateway_accepting 0');
  });
});
