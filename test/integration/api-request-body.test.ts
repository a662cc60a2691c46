// The API reads request bodies straight from Node's socket (functions/api/src/middleware/request-body.ts):
// over a real socket, a chunked body and a Content-Length body both reach the route, a request without a
// body is not waited on, and a client that hangs up in the middle of its body changes nothing, logs no
// error and leaves the server serving.
import type { IncomingMessage } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { Firestore } from '@google-cloud/firestore';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openAuthenticator } from '../../functions/api/src/auth/authenticator.js';
import { ApiError } from '../../functions/api/src/errors.js';
import { limitBody } from '../../functions/api/src/middleware/body-limit.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { testProjectId } from '../support/emulators.js';

const log = memoryLogger();
// The real store on the emulator (this file's own project): what a cut body must not leave behind is a
// Firestore document.
const db = new Firestore({ projectId: testProjectId('demo-apibody') });
const store = new FirestoreProxyStore(db);
let api: ApiServer;

beforeAll(async () => {
  api = await startApiServer({
    deps: {
      version: 'test',
      store,
      publisher: new RecordingReconcilePublisher(),
      clock: systemClock,
      auth: openAuthenticator(),
      log,
    },
  });
});
afterAll(async () => {
  await api.close();
  await db.terminate();
});

const proxyJson = (name: string) =>
  JSON.stringify({ name, spec: { mode: 'external', endpoint: { host: '127.0.0.9', port: 3128 } } });

/** Writes raw bytes on a fresh connection; resolves to what came back before the server closed or 5 s. */
function raw(bytes: string, { hangUp = false, port = api.port } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    socket.setTimeout(5_000, () => socket.destroy());
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (/\r\n0\r\n\r\n$|^HTTP\/1\.1 \d+[\s\S]*\r\n\r\n[\s\S]*\}$/.test(got)) socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
    socket.write(bytes, () => {
      if (hangUp) setTimeout(() => socket.destroy(), 50);
    });
  });
}

const head = (method: string, path: string, extra: string) =>
  `${method} ${path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n${extra}`;

it('reads a Content-Length body and a chunked body', async () => {
  const a = proxyJson('body-length');
  const byLength = await raw(`${head('POST', '/v1/proxies', `Content-Length: ${a.length}\r\n\r\n`)}${a}`);
  expect(byLength).toMatch(/^HTTP\/1\.1 201 /);

  const b = proxyJson('body-chunked');
  const half = Math.floor(b.length / 2);
  const chunk = (s: string) => `${s.length.toString(16)}\r\n${s}\r\n`;
  const chunked = await raw(
    `${head('POST', '/v1/proxies', 'Transfer-Encoding: chunked\r\n\r\n')}${chunk(b.slice(0, half))}${chunk(b.slice(half))}0\r\n\r\n`,
  );
  expect(chunked).toMatch(/^HTTP\/1\.1 201 /);
  expect((await store.list()).map((p) => p.name).sort()).toEqual(['body-chunked', 'body-length']);
});

it('answers a request without a body at once', async () => {
  const res = await raw('GET /v1/proxies/body-length HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n');
  expect(res).toMatch(/^HTTP\/1\.1 200 /);
});

it('a client that hangs up halfway through its body changes nothing and logs no error', async () => {
  const body = proxyJson('body-cut');
  const before = log.lines.length;
  const res = await raw(
    `${head('POST', '/v1/proxies', `Content-Length: ${body.length}\r\n\r\n`)}${body.slice(0, 20)}`,
    { hangUp: true },
  );
  expect(res).toBe('');
  expect(await store.get('body-cut')).toBeNull();
  // Still serving, and the cut request was not a server error.
  const after = await fetch(`${api.url}/v1/proxies`);
  expect(after.status).toBe(200);
  const logged = log.lines.slice(before);
  expect(logged.filter((l) => l.severity === 'ERROR' || l.severity === 'CRITICAL')).toEqual([]);
});

it('a client gone before its body is read (an earlier middleware was awaiting) still settles the request', async () => {
  // Worker routes authenticate before they read the body: the client may hang up meanwhile, and Node then
  // destroys the request before the body reader ever looks at it.
  const settled: string[] = [];
  const app = new Hono<{ Bindings: { incoming: IncomingMessage } }>();
  app.onError((err, c) => {
    settled.push(err instanceof ApiError ? err.code : 'crash');
    return c.text('', 500);
  });
  app.use(async (c, next) => {
    const { incoming } = c.env;
    if (!incoming.destroyed) await new Promise((r) => incoming.once('close', r));
    await next();
  });
  app.use(limitBody());
  app.post('/x', async (c) => {
    settled.push('handled');
    return c.text('ok');
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((r) => server.once('listening', r));
  try {
    const port = (server.address() as AddressInfo).port;
    for (const body of ['{"half', '{"whole":true}']) {
      await raw(`${head('POST', '/x', `Content-Length: 14\r\n\r\n`)}${body}`, { hangUp: true, port });
    }
    for (let i = 0; i < 50 && settled.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(settled).toEqual(['invalid_request', 'invalid_request']);
  } finally {
    server.close();
  }
});
