// Invariant 6 for the admin API: malformed and hostile input — wrong types, unknown fields, deep nesting,
// huge strings, invalid names, prototype-pollution keys, wrong media types, empty and invalid JSON — gets
// a 4xx with its stable code from EVERY admin endpoint, never a 5xx, and changes nothing: the API's real
// Firestore adapter is asked for no write, the documents on the emulator are exactly as before (as stored:
// every field and update time) and nothing is published.
// Requests go over a real socket with exact bytes (node:http), so framing cases (chunked bodies, lying
// media types, invalid UTF-8, un-normalised paths) reach the server as a client would send them.

import { Agent, request } from 'node:http';
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anyOf } from '../../functions/api/src/auth/authenticator.js';
import { staticTokenAuthenticator } from '../../functions/api/src/auth/static-tokens.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { ObservedProxyStore } from '../../shared/src/testing/observed-proxy-store.js';
import { aProxy, externalSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { testProjectId } from '../support/emulators.js';

const TOKEN = 'bad-input-admin-token-0123456789';
// credentialsRef: the default cloud-init needs it (the API refuses a managed spec that could never boot).
const managed = {
  mode: 'managed',
  zone: 'us-central1-a',
  credentialsRef: { secret: 'proxy-creds', version: 'latest' },
};
const MiB = 1024 * 1024;

interface Case {
  name: string;
  method: string;
  path: string;
  body?: string | Buffer;
  /** Content-Type to send; null sends none. Defaults to application/json when there is a body. */
  type?: string | null;
  /** Send the body with Transfer-Encoding: chunked (no Content-Length). */
  chunked?: boolean;
  status: number;
  error: string;
}

interface RawResponse {
  status: number;
  text: string;
}

function send(api: ApiServer, c: Case, agent?: Agent): Promise<RawResponse> {
  const body = c.body === undefined ? undefined : Buffer.from(c.body);
  const type = c.type === undefined ? (body ? 'application/json' : null) : c.type;
  const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
  if (type !== null) headers['content-type'] = type;
  if (body && !c.chunked) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(
      { agent, host: '127.0.0.1', port: api.port, method: c.method, path: c.path, headers },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    // The server may answer (413) before reading a huge body and close: that is not a failure.
    req.on('error', (err) => (answered ? undefined : reject(err)));
    req.setTimeout(20_000, () => req.destroy(new Error(`timeout: ${c.name}`)));
    if (body && c.chunked) {
      for (let i = 0; i < body.length; i += 16 * 1024) req.write(body.subarray(i, i + 16 * 1024));
    } else if (body) {
      req.write(body);
    }
    req.end();
  });
}

const json = (v: unknown) => JSON.stringify(v);
/** The JSON text with its @@ replaced by bytes that are not UTF-8. */
const invalidUtf8 = (text: string) => {
  const [head = '', tail = ''] = text.split('@@');
  return Buffer.concat([Buffer.from(head), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(tail)]);
};
const nestObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const nestArrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

// Bodies that are wrong whatever the endpoint: framing, syntax, shape, size, pollution.
const anyBody = (method: string, path: string, wrap: (inner: string) => string): Case[] => {
  const c = (
    name: string,
    body: string | Buffer,
    status: number,
    error: string,
    extra: Partial<Case> = {},
  ): Case => ({
    name: `${method} ${path}: ${name}`,
    method,
    path,
    body,
    status,
    error,
    ...extra,
  });
  const hugeString = json({ name: 'x'.repeat(MiB), spec: { ...managed, image: 'x'.repeat(MiB) } });
  return [
    c('empty body', '', 400, 'invalid_json'),
    c('whitespace body', ' \n\t ', 400, 'invalid_json'),
    c('truncated JSON', '{"name":"a","spec":{', 400, 'invalid_json'),
    c('trailing comma', '{"capacity":4,}', 400, 'invalid_json'),
    c('single quotes', "{'capacity':4}", 400, 'invalid_json'),
    c('NaN literal', '{"capacity":NaN}', 400, 'invalid_json'),
    c('two JSON documents', '{}{}', 400, 'invalid_json'),
    c('array at the root', '[]', 400, 'invalid_request'),
    c('string at the root', '"x"', 400, 'invalid_request'),
    c('number at the root', '42', 400, 'invalid_request'),
    c('null at the root', 'null', 400, 'invalid_request'),
    c('1,000-deep objects', nestObjects(1000), 400, 'invalid_request'),
    c('1,000-deep arrays', nestArrays(1000), 400, 'invalid_request'),
    c('20,000-deep arrays (under the size limit)', nestArrays(20_000), 400, 'invalid_request'),
    c(
      '1,000-deep objects inside a field',
      wrap(`{"attributes":${nestObjects(1000)}}`),
      400,
      'invalid_request',
    ),
    c('__proto__ at the root', '{"__proto__":{"polluted":true}}', 400, 'invalid_request'),
    c(
      'constructor.prototype at the root',
      '{"constructor":{"prototype":{"polluted":true}}}',
      400,
      'invalid_request',
    ),
    c(
      '__proto__ in attributes',
      wrap('{"attributes":{"__proto__":{"polluted":"yes"}}}'),
      400,
      'invalid_request',
    ),
    c('constructor in attributes', wrap('{"attributes":{"constructor":"x"}}'), 400, 'invalid_request'),
    c('1 MiB strings (Content-Length)', hugeString, 413, 'payload_too_large'),
    c('1 MiB strings (chunked)', hugeString, 413, 'payload_too_large', { chunked: true }),
    c('65 KiB of whitespace', `${' '.repeat(65 * 1024)}{}`, 413, 'payload_too_large'),
    c('no Content-Type', '{}', 415, 'unsupported_media_type', { type: null }),
    c('text/plain', '{}', 415, 'unsupported_media_type', { type: 'text/plain' }),
    c('form-urlencoded', 'name=a', 415, 'unsupported_media_type', {
      type: 'application/x-www-form-urlencoded',
    }),
    c('multipart', '--x--', 415, 'unsupported_media_type', { type: 'multipart/form-data; boundary=x' }),
    c('application/jsonx', '{}', 415, 'unsupported_media_type', { type: 'application/jsonx' }),
    c('JSON in Latin-1', '{}', 415, 'unsupported_media_type', {
      type: 'application/json; charset=iso-8859-1',
    }),
    // Refused as a body, not as a zone: decoded with U+FFFD it would have passed in a free-form field.
    c('invalid UTF-8 in a string', invalidUtf8(wrap('{"zone":"us-central1-@@"}')), 400, 'invalid_json'),
  ];
};

// Spec contents that are wrong while keeping mode "managed": the same code from POST, PUT and PATCH.
const badSpecFields: Array<[string, Record<string, unknown> | string]> = [
  ['zone of the wrong type', { zone: 5 }],
  ['zone that is not a zone', { zone: 'mars' }],
  ['zone with a NUL', { zone: 'us-central1-a\u0000' }],
  ['zone with unicode', { zone: 'us-central1-ä' }],
  ['capacity as a string', { capacity: '4' }],
  ['fractional capacity', { capacity: 1.5 }],
  ['negative capacity', { capacity: -1 }],
  ['capacity 1e400 (Infinity)', '{"capacity":1e400}'],
  ['port out of range', { port: 70000 }],
  ['attributes as an array', { attributes: ['a'] }],
  ['attribute value as an object', { attributes: { k: { deep: 1 } } }],
  ['attribute value of 300 chars', { attributes: { k: 'v'.repeat(300) } }],
  ['33 attributes', { attributes: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])) }],
  ['attribute key with a space', { attributes: { 'bad key': 'v' } }],
  ['empty attribute key', { attributes: { '': 'v' } }],
  ['javascript: health-check URL', { healthCheck: { url: 'javascript:alert(1)' } }],
  ['file: health-check URL', { healthCheck: { url: 'file:///etc/passwd' } }],
  // Stored, listed to crawlers and sent through the proxy: a password in it would be in all of those.
  ['credentials in the health-check URL', { healthCheck: { url: 'http://u:s3cret@target.example/' } }],
  ['zero health-check interval', { healthCheck: { intervalSeconds: 0 } }],
  ['unknown health-check field', { healthCheck: { extra: 1 } }],
  ['cloudInit both inline and secretRef', { cloudInit: { inline: 'x', secretRef: { secret: 's' } } }],
  ['cloudInit of 40 KiB', { cloudInit: { inline: 'x'.repeat(40 * 1024) } }],
  ['secret id with a path', { credentialsRef: { secret: '../../etc' } }],
  ['secret version 0', { credentialsRef: { secret: 's', version: '0' } }],
  ['image of 60 KB', { image: 'x'.repeat(60_000) }],
  ['machine type with spaces', { machineType: 'E2 SMALL' }],
  ['empty provider', { provider: '' }],
  ['unknown protocol', { protocol: 'socks4' }],
  // An external endpoint may speak SOCKS5; a managed VM runs an HTTP proxy (400, issue protocol_unsupported).
  ['socks5 for a managed proxy', { protocol: 'socks5' }],
  ['gatewayPool as a string', { gatewayPool: 'yes' }],
  ['status in the spec', { status: { phase: 'Ready' } }],
  ['uid and generation in the spec', { uid: 'x', generation: 5 }],
  ['unknown field', { sneaky: true }],
  // JSON's \ud800 escape is a lone surrogate after parsing: Firestore refuses such a string (a 500 before).
  ['a lone surrogate in an attribute value', { attributes: { k: '\ud800x' } }],
  ['a lone surrogate in an attribute key', { attributes: { 'k\udc00': 'v' } }],
  ['a lone surrogate in the image', { image: 'img\ud800' }],
  ['a lone surrogate in cloudInit.inline', { cloudInit: { inline: '#cloud-config\n\udfff' } }],
  ['a lone surrogate in the health-check URL', { healthCheck: { url: 'http://h/\ud800' } }],
];

const specText = (fields: Record<string, unknown> | string, base: Record<string, unknown>) =>
  typeof fields === 'string'
    ? fields.replace(/^\{/, `${json(base).slice(0, -1)},`)
    : json({ ...base, ...fields });

const createCases = (): Case[] => {
  const post = (name: string, body: string, status = 400, error = 'invalid_request'): Case => ({
    name: `POST /v1/proxies: ${name}`,
    method: 'POST',
    path: '/v1/proxies',
    body,
    status,
    error,
  });
  const names = [
    '../x',
    'A',
    '-a',
    'a-',
    'ünïcode',
    'a b',
    '',
    'x'.repeat(64),
    'a/b',
    'a.b',
    'x\u0000',
    '😀',
    '1abc',
    'seeded\n',
  ];
  return [
    ...anyBody(
      'POST',
      '/v1/proxies',
      (inner) =>
        `{"name":"fresh","spec":${inner.replace(/^\{/, `{"mode":"managed","zone":"us-central1-a","credentialsRef":{"secret":"proxy-creds"},`).replace(/,\}$/, '}')}}`,
    ),
    ...names.map((n) => post(`name ${JSON.stringify(n)}`, json({ name: n, spec: managed }))),
    post('name of the wrong type', json({ name: 7, spec: managed })),
    post('no name', json({ spec: managed })),
    post('no spec', json({ name: 'fresh' })),
    post('spec as a string', json({ name: 'fresh', spec: 'managed' })),
    post('unknown top-level field', json({ name: 'fresh', spec: managed, extra: 1 })),
    post('status set by the caller', json({ name: 'fresh', spec: managed, status: { phase: 'Ready' } })),
    post(
      'uid set by the caller',
      json({ name: 'fresh', spec: managed, uid: '00000000-0000-4000-8000-000000000001' }),
    ),
    post('generation set by the caller', json({ name: 'fresh', spec: managed, generation: 9 })),
    post(
      'deletionRequestedAt set by the caller',
      json({ name: 'fresh', spec: managed, deletionRequestedAt: null }),
    ),
    post('unknown mode', json({ name: 'fresh', spec: { mode: 'teleport' } })),
    post('external without endpoint', json({ name: 'fresh', spec: { mode: 'external' } })),
    post(
      'external endpoint of an unknown protocol',
      json({
        name: 'fresh',
        spec: { mode: 'external', endpoint: { host: 'h', port: 1, protocol: 'socks4' } },
      }),
    ),
    post(
      'external endpoint host of 300 chars',
      json({ name: 'fresh', spec: { mode: 'external', endpoint: { host: 'h'.repeat(300), port: 1 } } }),
    ),
    post(
      'external attribute with a lone surrogate',
      json({
        name: 'sur-1',
        spec: { mode: 'external', endpoint: { host: 'h', port: 1 }, attributes: { k: '\ud800x' } },
      }),
    ),
    ...badSpecFields.map(([label, fields]) =>
      post(`spec with ${label}`, `{"name":"fresh","spec":${specText(fields, managed)}}`),
    ),
  ];
};

const specCases = (): Case[] => {
  const path = '/v1/proxies/seeded/spec';
  const put = (name: string, body: string, status = 400, error = 'invalid_request'): Case => ({
    name: `PUT ${path}: ${name}`,
    method: 'PUT',
    path,
    body,
    status,
    error,
  });
  const patch = (
    name: string,
    body: string,
    status = 400,
    error = 'invalid_request',
    type = 'application/merge-patch+json',
  ): Case => ({
    name: `PATCH ${path}: ${name}`,
    method: 'PATCH',
    path,
    body,
    type,
    status,
    error,
  });
  const asSpec = (inner: string) => inner.replace(/^\{/, '{"mode":"managed","zone":"us-central1-a",');
  return [
    ...anyBody('PUT', path, asSpec),
    ...anyBody('PATCH', path, (inner) => inner).map((c) => ({
      ...c,
      type: c.type === undefined ? 'application/merge-patch+json' : c.type,
    })),
    ...badSpecFields.map(([label, fields]) => put(label, specText(fields, managed))),
    ...badSpecFields.map(([label, fields]) => patch(label, specText(fields, {}).replace(/^\{,/, '{'))),
    put('unknown mode', json({ mode: 'teleport' })),
    put('mode changed to external', json(externalSpec()), 400, 'immutable_field'),
    put('spec wrapped in {spec}', json({ spec: managed })),
    patch('mode changed', json({ mode: 'external' }), 400, 'immutable_field'),
    patch('mode removed', json({ mode: null }), 400, 'immutable_field'),
    put('zone changed', json({ ...managed, zone: 'europe-west1-b' }), 400, 'immutable_field'),
    put('provider changed', json({ ...managed, provider: 'aws' }), 400, 'immutable_field'),
    patch('zone changed', json({ zone: 'europe-west1-b' }), 400, 'immutable_field'),
    patch('provider changed', json({ provider: 'aws' }), 400, 'immutable_field'),
    patch('required zone removed', json({ zone: null })),
    patch(
      'merge-patch media type with a charset other than UTF-8',
      '{}',
      415,
      'unsupported_media_type',
      'application/merge-patch+json; charset=utf-16',
    ),
  ];
};

const badPathNames = [
  'A',
  '-a',
  '%2E%2E%2Fx',
  '..%2Fseeded',
  '%C3%BC',
  'x'.repeat(64),
  'a%00',
  '%ZZ',
  'seeded%0A',
  'a.b',
  '%20',
];

const pathCases = (): Case[] =>
  badPathNames.flatMap((n): Case[] => [
    { name: `GET name ${n}`, method: 'GET', path: `/v1/proxies/${n}`, status: 400, error: 'invalid_request' },
    {
      name: `DELETE name ${n}`,
      method: 'DELETE',
      path: `/v1/proxies/${n}`,
      status: 400,
      error: 'invalid_request',
    },
    {
      name: `POST reconcile name ${n}`,
      method: 'POST',
      path: `/v1/proxies/${n}/reconcile`,
      status: 400,
      error: 'invalid_request',
    },
    {
      name: `PUT spec name ${n}`,
      method: 'PUT',
      path: `/v1/proxies/${n}/spec`,
      body: json(managed),
      status: 400,
      error: 'invalid_request',
    },
    {
      name: `PATCH spec name ${n}`,
      method: 'PATCH',
      path: `/v1/proxies/${n}/spec`,
      body: json({ capacity: 2 }),
      type: 'application/merge-patch+json',
      status: 400,
      error: 'invalid_request',
    },
  ]);

const otherCases = (): Case[] => [
  ...[
    'phase=ready',
    'phase=',
    'phase=Ready&phase=Pending',
    'phase[]=Ready',
    'attr.=x',
    'attr.__proto__=x',
    'attr.constructor=x',
    'attr.prototype=x',
    `attr.k=${'v'.repeat(300)}`,
    'attr.a%00=x',
    'attr.k=a&attr.k=b',
    'healthy=yes',
    '__proto__[polluted]=1',
    '__proto__=1',
    '=x',
    'healthy=true&healthy=false',
    'attr.region=eu&constructor=1',
    `${'x'.repeat(6000)}=1`,
  ].map(
    (q): Case => ({
      name: `GET /v1/proxies?${q.slice(0, 40)}`,
      method: 'GET',
      path: `/v1/proxies?${q}`,
      status: 400,
      error: 'invalid_request',
    }),
  ),
  // Dot segments are resolved (RFC 3986 §5.2.4) before routing: they cannot climb out to another route.
  {
    name: 'dot segments climbing out of the route',
    method: 'DELETE',
    path: '/v1/proxies/seeded/../../x',
    status: 404,
    error: 'not_found',
  },
  {
    name: 'DELETE with a body',
    method: 'DELETE',
    path: '/v1/proxies/seeded',
    body: json({ force: true }),
    status: 400,
    error: 'invalid_request',
  },
  {
    name: 'DELETE with a 1 MiB body',
    method: 'DELETE',
    path: '/v1/proxies/seeded',
    body: 'x'.repeat(MiB),
    status: 413,
    error: 'payload_too_large',
  },
  {
    name: 'reconcile with a body',
    method: 'POST',
    path: '/v1/proxies/seeded/reconcile',
    body: '{}',
    status: 400,
    error: 'invalid_request',
  },
  {
    name: 'PUT on the collection',
    method: 'PUT',
    path: '/v1/proxies',
    body: json(managed),
    status: 405,
    error: 'method_not_allowed',
  },
  {
    name: 'POST on a proxy',
    method: 'POST',
    path: '/v1/proxies/seeded',
    body: json(managed),
    status: 405,
    error: 'method_not_allowed',
  },
  {
    name: 'POST on a spec',
    method: 'POST',
    path: '/v1/proxies/seeded/spec',
    body: json(managed),
    status: 405,
    error: 'method_not_allowed',
  },
  {
    name: 'DELETE a spec',
    method: 'DELETE',
    path: '/v1/proxies/seeded/spec',
    status: 405,
    error: 'method_not_allowed',
  },
];

describe('bad input to every admin endpoint', () => {
  const projectId = testProjectId('demo-apibad');
  const db = new Firestore({ projectId });
  const store = new ObservedProxyStore(new FirestoreProxyStore(db));
  const publisher = new RecordingReconcilePublisher();
  const log = memoryLogger();
  let api: ApiServer;

  beforeAll(async () => {
    await store.inner.create(aProxy({ name: 'seeded' }));
    await store.inner.create(
      aProxy({ name: 'outside', spec: externalSpec({ attributes: { region: 'eu' } }) }),
    );
    const auth = anyOf([staticTokenAuthenticator([{ name: 'test', token: TOKEN }])]);
    api = await startApiServer({ deps: { version: 't', store, publisher, clock: systemClock, auth, log } });
  });

  afterAll(async () => {
    await api?.close();
    await db.terminate();
  });

  const cases = [...createCases(), ...specCases(), ...pathCases(), ...otherCases()];

  it('covers every admin endpoint with a few hundred cases', () => {
    const endpoints = new Set(
      cases.map((c) => `${c.method} ${c.path.split('?')[0]?.replace(/\/proxies\/[^/]+/, '/proxies/{name}')}`),
    );
    for (const e of [
      'POST /v1/proxies',
      'GET /v1/proxies',
      'GET /v1/proxies/{name}',
      'PUT /v1/proxies/{name}/spec',
      'PATCH /v1/proxies/{name}/spec',
      'DELETE /v1/proxies/{name}',
      'POST /v1/proxies/{name}/reconcile',
    ]) {
      expect(endpoints).toContain(e);
    }
    expect(cases.length).toBeGreaterThan(250);
  });

  // Every document of the collection as stored, with its update time (moved by any write): one query.
  const documents = async () =>
    (await db.collection(Collections.proxies).get()).docs.map((d) => ({
      name: d.id,
      updateTime: d.updateTime.valueOf(),
      data: d.data(),
    }));
  type Documents = Awaited<ReturnType<typeof documents>>;
  // What the previous case read after its request: the cases run one after another and nothing else
  // writes, so that is this case's "before" too, one read per case instead of two. Unset when a case
  // stopped before that read or found a change: the next case reads afresh.
  let lastAfter: Documents | undefined;
  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const before = lastAfter ?? (await documents());
    lastAfter = undefined;
    const [writes, published] = [store.writeCalls.length, publisher.published.length];
    const res = await send(api, c);
    expect(res.status, res.text.slice(0, 300)).toBe(c.status);
    const body = JSON.parse(res.text) as { error: string; message: string };
    expect(body.error).toBe(c.error);
    expect(typeof body.message).toBe('string');
    expect(res.text.length).toBeLessThan(8 * 1024); // nothing huge is echoed back
    expect(store.writeCalls.slice(writes)).toEqual([]);
    const after = await documents();
    expect(after).toEqual(before);
    lastAfter = after;
    expect(publisher.published.slice(published)).toEqual([]);
  });

  it('keeps a kept-alive connection usable after refusing an oversized body', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const huge = json({ name: 'x'.repeat(MiB) });
      for (const chunked of [true, false]) {
        const big = {
          name: 'big',
          method: 'POST',
          path: '/v1/proxies',
          body: huge,
          chunked,
          status: 413,
          error: '',
        };
        expect((await send(api, big, agent)).status).toBe(413);
        const next = await send(
          api,
          { name: 'next', method: 'GET', path: '/v1/proxies/seeded', status: 200, error: '' },
          agent,
        );
        expect(next.status).toBe(200);
      }
    } finally {
      agent.destroy();
    }
  });

  it('wrote and published nothing at all, left no prototype polluted, logged no 5xx, and still serves', async () => {
    expect(store.writeCalls).toEqual([]);
    expect(publisher.published).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(log.lines.filter((l) => l.severity === 'ERROR')).toEqual([]);
    const ok = await send(api, {
      name: 'good create',
      method: 'POST',
      path: '/v1/proxies',
      body: json({ name: 'fresh', spec: managed }),
      status: 201,
      error: '',
    });
    expect(ok.status).toBe(201);
    expect(publisher.published).toEqual([{ proxy: 'fresh', reason: 'created' }]);
  });
});

describe('JSON under a Content-Type that RFC 9110 allows', () => {
  const db = new Firestore({ projectId: testProjectId('demo-apict') });
  const store = new FirestoreProxyStore(db);
  let server: ApiServer;

  beforeAll(async () => {
    const auth = anyOf([staticTokenAuthenticator([{ name: 'test', token: TOKEN }])]);
    const deps = { version: 't', store, publisher: new RecordingReconcilePublisher(), clock: systemClock };
    server = await startApiServer({ deps: { ...deps, auth, log: memoryLogger() } });
  });

  afterAll(async () => {
    await server?.close();
    await db.terminate();
  });

  // Not bad input: RFC 9110 §8.3.1 allows whitespace before ";" and an empty parameter, and "utf8" is
  // UTF-8. Each was a 415 (the first two a bare "Unsupported Media Type" from the OpenAPI route's gate).
  it.each([
    ['ct-1', 'application/json ; charset=utf-8'],
    ['ct-2', 'application/json;'],
    ['ct-3', 'application/json; charset=utf8'],
  ])('creates %s sent as %j', async (name, type) => {
    const body = json({ name, spec: managed });
    const res = await send(server, {
      name,
      method: 'POST',
      path: '/v1/proxies',
      body,
      type,
      status: 201,
      error: '',
    });
    expect(res.status, res.text.slice(0, 300)).toBe(201);
    expect((await store.get(name))?.proxy.name).toBe(name);
  });
});
